"""The index's MiniLM as a true int8 copy: every weight projection quantized, after smoothing away activation outliers;
and the calibration texts of every quantized encoder (`calibration_feeds`, also NNCF's for the reader, `mpnet.py`).

onnxruntime's dynamic quantization stores each projection's weights as int8 (a
scale per output channel) and quantizes its input per run, so the products run
as int8 on the CPU's VNNI units. An input with a few very large channels loses
the rest of its range to 8 bits. SmoothQuant (Xiao et al., 2023) moves that
range into the weights first: each input channel j is divided by
s_j = max|X_j|^α / max|W_j|^(1-α), measured on a few calibration texts, and the
weight's row j multiplied by it, which leaves the float model's output unchanged.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

import numpy as np

from assistant.ingest.corpus import read_corpus
from assistant.settings import SAMPLE_CORPUS

ALPHA = 0.75  # 0.5 (the paper's default) left these encoders' outliers in the activations: cosines off by 0.12


def calibration_feeds(tokenizer: Path, max_tokens: int, token_types: bool = False) -> list[dict[str, np.ndarray]]:
    """Model inputs for 32 abstracts spread over the shipped sample: what the encoders read, as a build and a question do."""
    from tokenizers import Tokenizer

    encode = Tokenizer.from_file(str(tokenizer))
    encode.enable_truncation(max_tokens)
    encode.no_padding()
    feeds = []
    for paper in read_corpus(SAMPLE_CORPUS).papers[::14][:32]:
        ids = np.asarray([encode.encode(paper.abstract).ids], dtype=np.int64)
        feeds.append({"input_ids": ids, "attention_mask": np.ones_like(ids)} | ({"token_type_ids": np.zeros_like(ids)} if token_types else {}))
    return feeds


def int8_copy(source: Path, target: Path, feeds: list[dict[str, np.ndarray]], fold: bool = False) -> None:
    """Write `source` to `target` with every weight MatMul smoothed on `feeds` (model inputs of calibration texts) and in int8.

    `fold`: first let onnxruntime fold the graph's constants (a model whose weights are stored as int8 and
    turned back into float on every run, as the MiniLM package's is, then has float weights to smooth).
    """
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".quantize-") as scratch:
        folder = Path(scratch)
        if fold:
            source = _folded(source, folder / "folded.onnx")
        model = onnx.load(str(source))
        weights = {tensor.name: tensor for tensor in model.graph.initializer}
        products = [(i, node) for i, node in enumerate(model.graph.node) if node.op_type == "MatMul" and node.input[1] in weights]
        _smooth(model, products, weights, _input_maxima(model, products, feeds, folder / "calibrate.onnx"))
        onnx.save(model, str(folder / "smoothed.onnx"))
        logging.disable(logging.WARNING)  # its advice to pre-process the graph is for static quantization
        try:
            quantize_dynamic(str(folder / "smoothed.onnx"), str(target), weight_type=QuantType.QInt8, per_channel=True,
                             nodes_to_quantize=[node.name for _, node in products])
        finally:
            logging.disable(logging.NOTSET)


def _folded(source: Path, target: Path) -> Path:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(target)
    onnxruntime.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
    return target


def _input_maxima(model: object, products: list[tuple[int, object]], feeds: list[dict[str, np.ndarray]], scratch: Path) -> dict[str, np.ndarray]:
    """Each product's input: the largest magnitude per channel over every token of `feeds`."""
    import onnx
    import onnxruntime

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    inputs = sorted({node.input[0] for _, node in products})
    probe.graph.output.extend(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None) for name in inputs)
    onnx.save(probe, str(scratch))
    session = onnxruntime.InferenceSession(str(scratch), providers=["CPUExecutionProvider"])
    maxima: dict[str, np.ndarray] = {}
    for feed in feeds:
        for name, values in zip(inputs, session.run(inputs, feed)):
            channel = np.abs(values).reshape(-1, values.shape[-1]).max(axis=0)
            maxima[name] = np.maximum(maxima.get(name, channel), channel)
    return maxima


def _smooth(model: object, products: list[tuple[int, object]], weights: dict, maxima: dict[str, np.ndarray]) -> None:
    """Divide each product's input by s (a Mul node before it) and multiply its weight's rows by s: the same output."""
    from onnx import helper, numpy_helper

    graph = model.graph  # type: ignore[attr-defined]
    added = []
    for number, (place, node) in enumerate(products):
        weight = numpy_helper.to_array(weights[node.input[1]])
        scale = maxima[node.input[0]].clip(1e-5) ** ALPHA / np.abs(weight).max(axis=1).clip(1e-5) ** (1 - ALPHA)
        weights[node.input[1]].CopyFrom(numpy_helper.from_array((weight * scale[:, None]).astype(np.float32), node.input[1]))
        inverse = numpy_helper.from_array((1 / scale).astype(np.float32), f"{node.name}/smoothing")
        graph.initializer.append(inverse)
        smoothed = f"{node.input[0]}/smoothed/{number}"
        added.append((place, helper.make_node("Mul", [node.input[0], inverse.name], [smoothed], name=f"{node.name}/Smooth")))
        node.input[0] = smoothed
    for position, mul in sorted(added, key=lambda pair: -pair[0]):  # from the end, so earlier places stay right
        graph.node.insert(position, mul)
