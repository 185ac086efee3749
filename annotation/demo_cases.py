"""Synthetic demo cases. Invented for demonstration: no real patient, no real model.

Each case has an input, a gold reference and three outputs written to be of different
quality: "strong" close to the reference, "partial" correct but incomplete, "weak" with an
omission and an error. The demo files each output as one item, under the invented model
that `DEMO_MODELS` maps to its quality.
"""

from __future__ import annotations

DEMO_MODELS = {
    "strong": "meridian-med-70b",
    "partial": "openward-clin-8b",
    "weak": "quickchart-1b",
}

# (subcategory, benchmark, input, reference, strong, partial, weak)
DEMO_CASES: list[tuple[str, str, str, str, str, str, str]] = [
    (
        "Supporting Diagnostic Decisions",
        "demo-dx",
        "A 58-year-old man has crushing chest pain for 40 minutes, sweating and nausea. ECG shows "
        "ST elevation in II, III and aVF. What is the most likely diagnosis and the first steps?",
        "Acute inferior ST-elevation myocardial infarction. Give aspirin, start reperfusion "
        "(primary PCI within 90 minutes), check right-sided leads for RV involvement and avoid nitrates if RV infarct.",
        "Most likely an acute inferior STEMI. Give aspirin 300 mg, activate the cath lab for primary PCI, "
        "record right-sided leads (V4R) and avoid nitrates if the right ventricle is involved.",
        "This looks like a heart attack (inferior STEMI). Give aspirin and arrange PCI.",
        "Probably pericarditis. Give ibuprofen and nitrates and repeat the ECG tomorrow.",
    ),
    (
        "Supporting Diagnostic Decisions",
        "demo-dx",
        "A 24-year-old woman has fever, neck stiffness and a petechial rash on the legs for 6 hours. "
        "What is the working diagnosis and what must happen first?",
        "Suspected meningococcal meningitis with septicaemia. Give parenteral antibiotics (e.g. ceftriaxone) "
        "immediately, take blood cultures without delaying treatment, and start sepsis care.",
        "Suspected meningococcal disease. Give IV ceftriaxone at once, take blood cultures but do not delay "
        "antibiotics, start sepsis resuscitation and notify public health.",
        "Could be meningitis; give antibiotics soon.",
        "Likely a viral rash. Wait for the lumbar puncture result before any antibiotics.",
    ),
    (
        "Planning Treatments",
        "demo-tx",
        "Newly diagnosed type 2 diabetes, HbA1c 8.1%, eGFR 75, no heart disease, BMI 31. "
        "Suggest an initial treatment plan.",
        "Lifestyle measures plus metformin, titrated to 2 g/day as tolerated; recheck HbA1c in 3 months; "
        "consider a GLP-1 receptor agonist if targets are not met or for weight.",
        "Start metformin with diet and exercise advice, titrating to 2 g/day as tolerated. Recheck HbA1c in "
        "3 months; add a GLP-1 receptor agonist if the target is not met, which also helps weight.",
        "Metformin and lifestyle changes.",
        "Start insulin at once and stop metformin because of the BMI.",
    ),
    (
        "Planning Treatments",
        "demo-tx",
        "Uncomplicated cystitis in a non-pregnant 30-year-old woman with no allergies. First-line treatment?",
        "Nitrofurantoin 100 mg modified-release twice daily for 5 days (or fosfomycin single dose, "
        "or local guideline alternative); advise fluids and return if fever or flank pain.",
        "Nitrofurantoin 100 mg MR twice daily for 5 days, or a single dose of fosfomycin. Return if fever, "
        "flank pain or no improvement in 48 hours.",
        "Nitrofurantoin for a few days.",
        "Ciprofloxacin for 14 days is the first choice.",
    ),
    (
        "Predicting Patient Risks and Outcomes",
        "demo-risk",
        "An 81-year-old with atrial fibrillation, hypertension and diabetes, no prior stroke. "
        "Estimate the stroke risk score and say whether to anticoagulate.",
        "CHA2DS2-VASc = 4 (age >= 75: 2, hypertension: 1, diabetes: 1). Anticoagulation is recommended, "
        "preferably a DOAC, after assessing bleeding risk.",
        "CHA2DS2-VASc is 4 (age 75 or over 2 points, hypertension 1, diabetes 1), so anticoagulation with a "
        "DOAC is recommended after a bleeding-risk review.",
        "High risk, anticoagulate.",
        "CHA2DS2-VASc is 2; aspirin alone is enough.",
    ),
    (
        "Providing Clinical Knowledge Support",
        "demo-knowledge",
        "Which common drug interaction should be checked when starting clarithromycin in a patient on simvastatin?",
        "Clarithromycin strongly inhibits CYP3A4, raising simvastatin levels and the risk of myopathy and "
        "rhabdomyolysis; withhold simvastatin during the course or choose another antibiotic.",
        "Clarithromycin inhibits CYP3A4 and raises simvastatin levels, risking myopathy and rhabdomyolysis. "
        "Pause simvastatin during the course or use azithromycin instead.",
        "There is a CYP3A4 interaction; be careful.",
        "No relevant interaction; both can be given together.",
    ),
    (
        "Documenting Patient Visits",
        "demo-notes",
        "Write a SOAP note. Conversation: patient reports 3 days of sore throat and fever 38.4 C, no cough. "
        "Exam: tonsillar exudate, tender anterior cervical nodes. Rapid strep test positive.",
        "S: 3 days sore throat, fever 38.4 C, no cough. O: tonsillar exudate, tender anterior cervical "
        "lymphadenopathy, rapid strep positive. A: streptococcal pharyngitis. P: phenoxymethylpenicillin "
        "10 days, analgesia, return if worsening.",
        "S: Sore throat for 3 days, fever to 38.4 C, no cough.\nO: Tonsillar exudate; tender anterior "
        "cervical nodes; rapid strep test positive.\nA: Group A streptococcal pharyngitis.\nP: Penicillin V "
        "for 10 days, paracetamol, safety-net advice.",
        "S: sore throat, fever. O: exudate. A: strep throat. P: antibiotics.",
        "S: cough and sore throat. O: normal exam. A: viral URTI. P: rest.",
    ),
    (
        "Documenting Patient Visits",
        "demo-notes",
        "Summarise this follow-up visit: blood pressure today 152/94 on amlodipine 5 mg, home readings "
        "average 148/92, no side effects, adherent. Plan discussed: increase dose, recheck in 4 weeks.",
        "Hypertension not at target on amlodipine 5 mg (clinic 152/94, home mean 148/92), adherent, no side "
        "effects. Increase amlodipine to 10 mg; review with home readings in 4 weeks.",
        "Hypertension above target: clinic 152/94, home average 148/92 on amlodipine 5 mg; adherent, no side "
        "effects. Plan: amlodipine increased to 10 mg, review in 4 weeks with home readings.",
        "BP high on amlodipine; dose increased.",
        "BP controlled on amlodipine 5 mg; no change; review in a year.",
    ),
    (
        "Documenting Diagnostic Reports",
        "demo-reports",
        "Turn these findings into a radiology impression: 2.1 cm spiculated nodule right upper lobe, "
        "no lymphadenopathy, no effusion.",
        "Impression: 2.1 cm spiculated right upper lobe nodule, suspicious for primary lung malignancy. "
        "No thoracic lymphadenopathy or effusion. Recommend PET-CT and multidisciplinary review.",
        "Impression: spiculated 2.1 cm nodule in the right upper lobe, suspicious for lung cancer; no "
        "lymphadenopathy or pleural effusion. Recommend PET-CT and referral to the lung cancer MDT.",
        "Right upper lobe nodule, suspicious.",
        "Benign-appearing nodule; routine follow-up in 2 years.",
    ),
    (
        "Providing Patient Education Resources",
        "demo-education",
        "Explain to a patient, in plain language, what an HbA1c test measures.",
        "HbA1c shows your average blood sugar over the past two to three months. It measures how much "
        "sugar has stuck to your red blood cells. Higher numbers mean higher average sugar.",
        "The HbA1c test shows your average blood sugar over the last 2 to 3 months. Sugar in your blood "
        "sticks to red blood cells, and the test measures how much has stuck. A higher number means your "
        "sugar has been higher on average.",
        "It shows your average blood sugar over a few months.",
        "It measures your sugar level at the moment of the blood test, so fast before it.",
    ),
    (
        "Delivering Personalized Care Instructions",
        "demo-instructions",
        "Write discharge instructions after a laparoscopic appendectomy for a 35-year-old.",
        "Keep wounds clean and dry; shower after 48 hours; no heavy lifting for 2-4 weeks; take "
        "paracetamol or ibuprofen for pain; return for fever, worsening pain, wound redness or vomiting.",
        "Keep the small wounds clean and dry; you may shower after 2 days. Avoid heavy lifting for 2 to 4 "
        "weeks. Take paracetamol or ibuprofen for pain. Come back if you have a fever, pain that gets worse, "
        "red or leaking wounds, or vomiting.",
        "Rest, take painkillers, come back if unwell.",
        "You can lift heavy weights from tomorrow; antibiotics for 6 weeks.",
    ),
    (
        "Patient-Provider Messaging",
        "demo-messaging",
        "Reply to a patient portal message: 'My ankle is swollen since starting amlodipine last month. Should I stop it?'",
        "Ankle swelling is a common side effect of amlodipine. Please do not stop it on your own; book a "
        "review so we can check your blood pressure and adjust the dose or switch medicine. Seek urgent "
        "care if you have chest pain or breathlessness.",
        "Ankle swelling is a known side effect of amlodipine and usually not dangerous. Please keep taking it "
        "for now and book an appointment so we can check your blood pressure and change the dose or the "
        "medicine. If you get breathless or have chest pain, seek urgent care.",
        "This is a side effect; book an appointment.",
        "Stop amlodipine today; swelling means kidney damage.",
    ),
    (
        "Enhancing Patient Understanding and Accessibility in Health Communication",
        "demo-accessibility",
        "Rewrite at a 6th-grade reading level: 'Adherence to the prescribed anticoagulant regimen is "
        "imperative to mitigate thromboembolic risk.'",
        "Take your blood thinner exactly as your doctor told you. This helps stop dangerous blood clots.",
        "Take your blood thinner every day, just as your doctor said. It helps stop dangerous blood clots.",
        "Take your medicine as told.",
        "You can skip your blood thinner on days you feel fine.",
    ),
    (
        "Conducting Literature Research",
        "demo-research",
        "Summarise the main finding a clinician should take from a randomised trial where drug X lowered "
        "the primary endpoint from 10% to 8% (HR 0.80, 95% CI 0.70-0.91) over 3 years.",
        "Drug X reduced the primary endpoint by 20% relative (2% absolute) over 3 years; the CI excludes 1. "
        "About 50 patients need treatment for 3 years to prevent one event.",
        "Drug X lowered the primary endpoint from 10% to 8%: a 20% relative and 2 percentage-point absolute "
        "reduction (HR 0.80, 95% CI 0.70-0.91). Number needed to treat about 50 over 3 years.",
        "Drug X works; HR 0.80.",
        "Drug X halves the risk; the result is not statistically significant.",
    ),
    (
        "Analyzing Clinical Research Data",
        "demo-research",
        "In a cohort of 200 patients, 30 developed delirium. Give the cumulative incidence with a 95% "
        "confidence interval (Wilson).",
        "Cumulative incidence 15.0% (30/200), 95% Wilson CI about 10.7% to 20.6%.",
        "30 of 200 is 15.0%; the 95% Wilson interval is roughly 10.7% to 20.6%.",
        "15%.",
        "30%, 95% CI 25% to 35%.",
    ),
    (
        "Care Coordination and Planning",
        "demo-admin",
        "Draft a referral summary to a community nurse for a patient discharged on new insulin.",
        "Patient discharged on basal insulin (glargine 10 units at night). Please visit within 48 hours to "
        "check injection technique and glucose diary, review hypoglycaemia awareness, and report fasting "
        "glucose above 13 or below 4 mmol/L to the diabetes team.",
        "Discharged on insulin glargine 10 units at night. Please visit within 2 days to check injection "
        "technique and the glucose diary, teach hypoglycaemia recognition, and contact the diabetes team if "
        "fasting glucose is above 13 or below 4 mmol/L.",
        "New insulin; please visit.",
        "Patient on insulin; no follow-up needed.",
    ),
]
