"""The command line every recipe reference shares, read before torch loads.

OpenBLAS keeps a thread count of its own, read from OPENBLAS_NUM_THREADS
when torch loads it, so --threads must be known (and the variable set)
before `import torch`; the scripts call parse() first.
"""
import argparse
import os


def parse(doc, *options):
    """The arguments: (flag, type, default) for each of `options`, then
    --threads (default 1, which also sets OPENBLAS_NUM_THREADS).
    `doc` is the script's docstring; its first paragraph describes it."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n", maxsplit=1)[0])
    for flag, kind, default in options:
        parser.add_argument(flag, type=kind, default=default)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
    return args
