"""mx.gluon (being assembled)."""
