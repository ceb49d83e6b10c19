"""Write this package from a training folder of ``g2gt train seq2seq`` (run from the repository root):

    python models/en_de_multi30k/make_package.py runs/mt

It loads the best checkpoint, stores its weights as float16 in
``g2gt_model_en_de_multi30k/model/translator.pt``, writes the card (``model.json`` and ``README.md``: data,
licence, the command that trained it, the BLEU it scored on Multi30k val) and the package files, then checks
that the float16 model translates. ``pip install models/en_de_multi30k`` installs it (offline).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from g2gt.data import find_data
from g2gt.seq2seq import Translator, build_translation_package, mt_scores, read_lines, training_card

NAME = "en_de_multi30k"
HERE = Path(__file__).resolve().parent
LICENSE = (
    "Trained on Multi30k (Elliott et al., 2016), English captions of Flickr30k images (Young et al., 2014) with "
    "German translations. The data is distributed for research and non-commercial use only, and this model "
    "inherits those terms: use it for research and non-commercial purposes only, and cite Elliott, Frank, "
    "Sima'an and Specia (2016), 'Multi30K: Multilingual English-German Image Descriptions', Proceedings of "
    "the 5th Workshop on Vision and Language. The g2gt code itself is under the library's own licence.")
TRAINING_DATA = (
    "Multi30k task 1, English -> German: the 29,000 training pairs ($G2GT_DATA/multi30k/train.{en,de}.gz), "
    "raw untokenised text; the 1,014 val pairs (val.{en,de}.gz) chose the best checkpoint (lowest dev loss) "
    "and give the scores below. Multi30k sentences are short image captions: expect good translations of "
    "such sentences only.")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", help="the training folder (best.pt, config.json, final.json)")
    ap.add_argument("--command", default="OMP_NUM_THREADS=1 g2gt train seq2seq --out runs/mt --max-minutes 80 "
                    "--threads 1 --bpe-vocab 6000 --no-progress", help="the command that trained it (for the card)")
    args = ap.parse_args()
    translator = Translator.load(args.run, device="cpu", dtype="float32")
    card = training_card(args.run, data_name="Multi30k val, the training run's float32 best.pt")
    val = find_data("multi30k/val.en.gz"), find_data("multi30k/val.de.gz")
    if all(val):  # score what is shipped: the float16 weights, as loaded from the package
        with tempfile.TemporaryDirectory() as tmp:
            half = Translator.load(translator.save(Path(tmp) / "f16.pt"), device="cpu", dtype="float32")
        src, ref = read_lines(val[0]), read_lines(val[1])
        t0 = time.time()
        hyps = half(src)
        scores = mt_scores(ref, hyps)
        scores.update(beam=half.config.beam, length_penalty=half.task.settings.length_penalty,
                      translate_seconds=round(time.time() - t0, 1))
        card.setdefault("scores", {})["Multi30k val, this package (float16 weights)"] = scores
    card.update(name=NAME, language="en -> de", license=LICENSE, training_data=TRAINING_DATA,
                description="English -> German translation of short image captions (Multi30k), a "
                            f"{sum(p.numel() for p in translator.model.parameters()) / 1e6:.1f}M-parameter "
                            "G2GTransformer",
                commands=[args.command, f"python models/{NAME}/make_package.py {args.run}"])
    build_translation_package(translator, NAME, HERE, card=card)
    packed = Translator.load(HERE / f"g2gt_model_{NAME}" / "model", device="cpu", dtype="float32")
    print(json.dumps(packed(["A man sleeps .", "", "Two dogs are playing in the snow ."]), ensure_ascii=False))
    for what, sc in card.get("scores", {}).items():
        print(f"{what}: BLEU {sc['bleu']:.2f}, chrF {sc['chrf']:.2f} (beam {sc.get('beam')})")
    size = (HERE / f"g2gt_model_{NAME}" / "model" / "translator.pt").stat().st_size / 2**20
    print(f"wrote {HERE} ({size:.1f} MB of weights): pip install {HERE}")


if __name__ == "__main__":
    main()
