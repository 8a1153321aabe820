"""Regenerate tests/expected_files.txt from a real bake of the default answers.

    python tests/make_manifest.py          # rewrite the manifest
    python tests/make_manifest.py --check  # exit 1 and show the difference if it is stale

Bakes into a temporary folder with an isolated cookiecutter config, lists every generated file
(relative POSIX paths, sorted, one per line) and writes them under a short header. Review the
diff of the manifest before committing it: every added or removed line is a file users get.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bakery import MANIFEST, bake, describe_difference, file_set, read_manifest, write_config

HEADER = "# Files of the default bake. Regenerate with: python tests/make_manifest.py\n"


def baked_files() -> list[str]:
    with tempfile.TemporaryDirectory(prefix="manifest-") as folder:
        config = write_config(Path(folder) / "config")
        project = bake(Path(folder) / "out", config)
        return sorted(file_set(project))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only; do not write")
    args = parser.parse_args(argv)
    files = baked_files()
    if args.check:
        expected = read_manifest() if MANIFEST.exists() else set()
        if set(files) == expected:
            print(f"{MANIFEST.name} is up to date ({len(files)} files)")
            return 0
        print(describe_difference(set(files), expected, MANIFEST.name))
        return 1
    MANIFEST.write_text(HEADER + "".join(f"{path}\n" for path in files), encoding="utf-8")
    print(f"wrote {MANIFEST} ({len(files)} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
