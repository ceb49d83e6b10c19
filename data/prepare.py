"""Lay out a g2gt data folder ($G2GT_DATA) from data you already have (see data/README.md).

    python data/prepare.py --ud ~/ud-treebanks-v2.14 --multi30k ~/multi30k/data/task1/raw --out ~/g2gt-data
    export G2GT_DATA=~/g2gt-data

--ud is a UD release folder (with UD_* treebank folders) or one treebank folder. Every treebank with a
*-ud-train.conllu[.gz] file is linked under OUT/ud/UD_NAME/ (with its LICENSE.txt); English EWT is also
written, decompressed, to OUT/ud-en-ewt/ (the default data of the English recipes). --multi30k is a folder with
train.{en,de}[.gz] and val.{en,de}[.gz]; they are stored gzipped under OUT/multi30k/. Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import sys
from pathlib import Path


def link_or_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if dst.exists() or dst.is_symlink():
        dst.unlink()
    try:
        os.symlink(src.resolve(), dst)
    except OSError:
        shutil.copyfile(src, dst)


def treebank_folders(root: Path) -> list[Path]:
    if any(root.glob("*-ud-train.conllu*")):
        return [root]
    return sorted(p for p in root.iterdir() if p.is_dir() and any(p.glob("*-ud-train.conllu*")))


def prepare_ud(root: Path, out: Path) -> int:
    folders = treebank_folders(root)
    if not folders:
        sys.exit(f"prepare.py: error: --ud {root}: no *-ud-train.conllu[.gz] file in it or in its UD_* folders")
    for tb in folders:
        for f in sorted(tb.iterdir()):
            if f.name.endswith((".conllu", ".conllu.gz")) or f.name.startswith("LICENSE"):
                link_or_copy(f, out / "ud" / tb.name / f.name)
        if tb.name == "UD_English-EWT":
            for split in ("train", "dev"):
                src = next(iter(tb.glob(f"en_ewt-ud-{split}.conllu*")), None)
                if src is not None:
                    dst = out / "ud-en-ewt" / f"en_ewt-ud-{split}.conllu"
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    opener = gzip.open if src.suffix == ".gz" else open
                    with opener(src, "rb") as fi, open(dst, "wb") as fo:
                        shutil.copyfileobj(fi, fo)
        print(f"ud/{tb.name}")
    return len(folders)


def prepare_multi30k(root: Path, out: Path) -> None:
    for name in ("train.en", "train.de", "val.en", "val.de"):
        src = root / f"{name}.gz" if (root / f"{name}.gz").exists() else root / name
        if not src.exists():
            sys.exit(f"prepare.py: error: --multi30k {root}: {name}[.gz] is missing")
        dst = out / "multi30k" / f"{name}.gz"
        if src.suffix == ".gz":
            link_or_copy(src, dst)
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            with open(src, "rb") as fi, gzip.open(dst, "wb") as fo:
                shutil.copyfileobj(fi, fo)
    print("multi30k")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ud", type=Path, help="a UD release folder or one treebank folder")
    ap.add_argument("--multi30k", type=Path, help="a folder with Multi30k train/val .en/.de files")
    ap.add_argument("--out", type=Path, required=True, help="the data folder to lay out (then export G2GT_DATA=OUT)")
    args = ap.parse_args(argv)
    if not args.ud and not args.multi30k:
        ap.error("give --ud and/or --multi30k")
    if args.ud:
        prepare_ud(args.ud, args.out)
    if args.multi30k:
        prepare_multi30k(args.multi30k, args.out)
    print(f"export G2GT_DATA={args.out.resolve()}")


if __name__ == "__main__":
    main()
