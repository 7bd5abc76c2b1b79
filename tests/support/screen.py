"""What a full-screen program shows: its output to an xterm replayed onto a grid.

curses redraws only the cells that change, so the raw text of a terminal holds
fragments; this replays the cursor and erase sequences curses sends an xterm
(and ignores colours and modes) to give the lines as a user would read them.
"""

from __future__ import annotations

import re

_SEQUENCE = re.compile(r"\x1b\[([?>=]?)([0-9;]*)([@A-Za-z`])|\x1b[()][0-9A-Za-z]|\x1b[=>78]")


def screen(text: str, rows: int, cols: int) -> list[str]:
    """The grid's lines after ``text``, right-trimmed."""
    grid = [[" "] * cols for _ in range(rows)]
    y = x = 0
    pos = 0
    while pos < len(text):
        found = _SEQUENCE.match(text, pos)
        if found:
            pos = found.end()
            if found.group(3) is None or found.group(1):
                continue
            args = [int(a) if a else 0 for a in found.group(2).split(";")]
            y, x = _csi(grid, found.group(3), args, y, x)
            continue
        char = text[pos]
        pos += 1
        if char == "\r":
            x = 0
        elif char == "\n":
            y = min(y + 1, rows - 1)
        elif char == "\b":
            x = max(x - 1, 0)
        elif char >= " " and char != "\x7f":
            if x < cols:
                grid[y][x] = char
            x = min(x + 1, cols - 1)
    return ["".join(row).rstrip() for row in grid]


def _csi(grid: list[list[str]], op: str, args: list[int], y: int, x: int) -> tuple[int, int]:
    """Apply one control sequence at the cursor (y, x); the cursor after it."""
    rows, cols = len(grid), len(grid[0])
    n = max(args[0], 1)
    row = grid[y]
    if op in "Hf":
        y, x = max(args[0], 1) - 1, (max(args[1], 1) - 1 if len(args) > 1 else 0)
    elif op == "d":
        y = n - 1
    elif op in "G`":
        x = n - 1
    elif op == "A":
        y -= n
    elif op == "B":
        y += n
    elif op == "C":
        x += n
    elif op == "D":
        x -= n
    elif op == "X":
        row[x : x + n] = [" "] * len(row[x : x + n])
    elif op == "K":
        start, end = {0: (x, cols), 1: (0, x + 1), 2: (0, cols)}[args[0]]
        row[start:end] = [" "] * (end - start)
    elif op == "J":
        for i in range(y + 1 if args[0] == 0 else 0, rows):
            grid[i] = [" "] * cols
        if args[0] == 0:
            row[x:] = [" "] * (cols - x)
    elif op == "P":
        del row[x : x + n]
        row.extend([" "] * (cols - len(row)))
    elif op == "@":
        row[x:x] = [" "] * n
        del row[cols:]
    elif op in "LM":
        for _ in range(n):
            if op == "L":
                grid.insert(y, [" "] * cols)
                del grid[rows]
            else:
                del grid[y]
                grid.append([" "] * cols)
    return min(max(y, 0), rows - 1), min(max(x, 0), cols - 1)
