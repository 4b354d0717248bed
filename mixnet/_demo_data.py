"""The demo's data: arithmetic problems as strings ("43+3", "512+87"), their answers, and padding statistics.

Everything is generated from a seed (nothing is downloaded). A problem is read one character at a time; its
answer is predicted as a right-aligned string of ANSWER_WIDTH characters ("  46", "-469"), one class per
position, so the network spells the answer instead of picking one of thousands of classes.
"""
import numpy as np

SYMBOLS = "0123456789+-"            # input characters; id 0 is the padding
ANSWER_SYMBOLS = "0123456789- "     # one class per answer position


def answer_width(max_digits):
    """Characters an answer needs: a sum of two max_digits numbers has one more digit; a difference a sign."""
    return max_digits + 1


def make_problems(count, max_digits, seed, ops="+-"):
    """`count` distinct problems "a+b" / "a-b" (with the operators in `ops`; operands of 1..max_digits digits,
    each digit count equally likely) and their answers, in a seeded random order."""
    rng = np.random.default_rng(seed)
    possible = len(ops) * (10 ** max_digits) ** 2
    if count > possible // 2:
        raise ValueError(f"make_problems: asked for {count} distinct problems, there are only {possible} "
                         f"with operands of up to {max_digits} digits; use fewer")
    problems = {}
    while len(problems) < count:
        digits = rng.integers(1, max_digits + 1, size=(2, count))
        low = np.where(digits > 1, 10 ** (digits - 1), 0)
        a, b = rng.integers(low, 10 ** digits)
        signs = rng.choice(list(ops), size=count)
        for x, y, sign in zip(a.tolist(), b.tolist(), signs.tolist()):
            problems.setdefault(f"{x}{sign}{y}", x - y if sign == "-" else x + y)
    texts = list(problems)[:count]
    return texts, [problems[t] for t in texts]


def encode(text):
    """A problem's characters as ids 1..len(SYMBOLS) (0 is left for padding)."""
    return np.array([SYMBOLS.index(c) + 1 for c in text], dtype=np.float32)


def encode_answer(answer, width):
    text = str(answer).rjust(width)
    if len(text) > width:
        raise ValueError(f"answer {answer} does not fit in {width} characters")
    return np.array([ANSWER_SYMBOLS.index(c) for c in text], dtype=np.float32)


def decode_answers(classes):
    """Rows of per-position class ids -> ints (None where the spelled string is not a number, e.g. "4-6")."""
    answers = []
    for row in np.asarray(classes):
        text = "".join(ANSWER_SYMBOLS[int(k)] for k in row).strip()
        try:
            answers.append(int(text))
        except ValueError:
            answers.append(None)
    return answers
