"""Pages of the annotation app, one module per audience."""
