#!/usr/bin/env python3
"""Where two greedy runs part, how close the reference's logits were: greedy_tie.py LOGITS N_TOKENS A B.

LOGITS holds the reference backend's teacher-forced logits (raw f32 [n_tokens, n_vocab], `saker run
--logits-out`) over the prompt and the tokens both runs generated before they parted; its last row chose the
next token. A and B are the two picks there. Prints the reference's logit gap between them and its largest
logit: a gap far below the backends' numeric difference is a near-tie either backend may break either way.
"""
import array
import sys


def main() -> int:
    path, n_tokens, a, b = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    values = array.array("f")
    with open(path, "rb") as f:
        values.frombytes(f.read())
    if n_tokens <= 0 or not values or len(values) % n_tokens:
        print(f"greedy_tie: {path} holds {len(values)} floats, not {n_tokens} rows", file=sys.stderr)
        return 2
    n_vocab = len(values) // n_tokens
    if not (0 <= a < n_vocab and 0 <= b < n_vocab):
        print(f"greedy_tie: ids {a}, {b} outside the vocabulary of {n_vocab}", file=sys.stderr)
        return 2
    row = values[len(values) - n_vocab:]
    print(f"{abs(row[a] - row[b]):.6f} {max(row):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
