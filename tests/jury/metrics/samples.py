"""Texts and names the metric tests share (test modules never import each other)."""

ROUGE = "rouge-score 0.1.2 rougeL+stemmer"

REF = "The patient was started on metformin for type 2 diabetes."
PARAPHRASE = "Metformin was begun to treat the patient's type 2 diabetes."
UNRELATED = "The quarterly earnings report beat analyst expectations."
