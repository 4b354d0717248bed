"""The README's first command runs the demo; it must keep working and keep learning."""
from mixnet import demo


def test_linear_regression_converges(capsys):
    assert demo.linear_regression() < 1e-3
    assert "learned w" in capsys.readouterr().out


def test_gluon_classifier_learns(capsys):
    assert demo.gluon_classifier(epochs=3) > 0.95
