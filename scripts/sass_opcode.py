"""The opcode of a SASS instruction without its predicate and modifiers: '@!P0 LDS.U16 R1, [R2]' -> 'LDS'.
Shared by scripts/stall-summary.py (ncu's source page) and scripts/sass-shape.py (cuobjdump listings)."""


def opcode(instruction):
    words = instruction.strip().split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else ""
