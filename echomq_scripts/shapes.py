"""Return shapes (`tuple[string, hash] | nil`): the one piece of their grammar that both the
runtime and the generator need. Standard library only, so that neither drags the other's
imports in.
"""


def split_shape(shape: str, separator: str) -> list[str]:
    """Split a return shape at top-level separators only (not inside brackets)."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(shape):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == separator and depth == 0:
            parts.append(shape[start:index].strip())
            start = index + 1
    parts.append(shape[start:].strip())
    return parts
