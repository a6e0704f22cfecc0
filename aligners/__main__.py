"""`python -m aligners ...` is the same as the `aligners` console script."""

from aligners.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
