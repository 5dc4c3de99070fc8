"""Export a small language model (GGUF or Hugging Face folder) to ONNX with KV cache, int8 weights."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import tempfile
from pathlib import Path

from edge_rag.errors import EdgeRagError, ModelNotFound
from edge_rag.models.folder import MANIFEST, file_sha256

from . import already_exported, quiet, require_export_extra
from . import log as _log
from .install import ensure_parts
from .packaged import DEFAULT_SLM, PACKAGED, PackagedSlm
from .packaged import PIP_HINT as PIP_HINT  # re-exported: the pip line of a packaged SLM

SUPPORTED_ARCHITECTURES = ("llama", "qwen2", "mistral")
BLOCK_SIZE = 32
MIN_AGREEMENT = 9
# (context, question, answer key): "the same answer" means both models' answers contain the
# key, or both miss it; small models word the same answer differently after quantization.
CHECKS = (
    ("The bakery on Elm Street opens at 7 am.", "When does the bakery open?", r"\b7\b"),
    ("Adam is Li Hua's landlord. Rent is due on the first.", "Who is Li Hua's landlord?", "adam"),
    ("Wolfgang plays the cello in a jazz band.", "Which instrument does Wolfgang play?", "cello"),
    ("The concert moved from Friday to Sunday because of rain.", "When is the concert now?",
     "sunday"),
    ("Jennifer runs 5 kilometres every morning.", "How far does Jennifer run?", r"\b5\b|five"),
    ("The blue car belongs to Yuriko; the red one to Chae.", "Whose car is blue?", "yuriko"),
    ("Paris is the capital of France.", "What is the capital of France?", "paris"),
    ("The meeting room is on the third floor.", "Which floor is the meeting room on?",
     "third|3rd"),
    ("Li Hua adopted a cat named Milo in March.", "What is the cat's name?", "milo"),
    ("The train to Berlin leaves at 9:15 from platform 4.", "Which platform does it leave from?",
     r"\b4\b|four"),
)
CHECK_QUESTIONS = tuple(f"Context: {c}\nQuestion: {q}\nAnswer briefly." for c, q, _ in CHECKS)
CHATML_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content']"
    " + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\\n' }}{% endif %}"
)



def assemble_gguf(model: PackagedSlm, work: Path) -> Path:
    """The packaged GGUF file (concatenated from parts when split), sha256-verified."""
    parts = [_package_dir(pkg, model.name) / rel for pkg, rel in _pairs(model)]
    target = parts[0] if len(parts) == 1 else work / f"{model.name}.gguf"
    if len(parts) > 1 and not (target.is_file() and file_sha256(target) == model.sha256):
        _log(f"assembling {model.name} from {len(parts)} parts ...")
        with open(target, "wb") as out:
            for part in parts:
                with open(part, "rb") as handle:
                    shutil.copyfileobj(handle, out, 1 << 22)
    digest = file_sha256(target)
    if digest != model.sha256:
        raise EdgeRagError(f"{target}: sha256 {digest} is not the pinned {model.sha256}; refusing it")
    return target


def export_slm(home: Path, source: str = DEFAULT_SLM, name: str | None = None,
               force: bool = False, keep_fp32: bool = False, install: bool = False) -> Path:
    """Export an SLM to ``home/models/NAME-int8``; ``source`` is a packaged name, .gguf or HF folder.

    With ``install`` the weight packages and the torch toolchain are pip-installed when missing.
    """
    name = name or (source if source in PACKAGED else Path(source).stem.lower())
    int8_dir = home / "models" / f"{name}-int8"
    if already_exported(int8_dir, name, force):
        return int8_dir
    ensure_parts(source, "optimum", install)
    require_export_extra()
    work = home / "work"
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        hf_dir, origin, stops = _load_to_hf_folder(source, work, Path(tmp) / "hf")
        _log("exporting to ONNX (text-generation-with-past) ...")
        onnx_dir = Path(tmp) / "onnx"
        _onnx_export(hf_dir, onnx_dir)
        _log("quantizing weights to int8 (MatMulNBits, block 32, symmetric, accuracy level 4) ...")
        quantized = Path(tmp) / "int8"
        quantized.mkdir()
        _quantize(onnx_dir / "model.onnx", quantized / "model.onnx")
        fp32_dir = Path(tmp) / f"{name}-fp32"
        _write_folder(onnx_dir / "model.onnx", hf_dir, fp32_dir, name, origin, stops, "fp32",
                      extra=onnx_dir)
        _write_folder(quantized / "model.onnx", hf_dir, int8_dir, name, origin, stops,
                      "int8-weight-only-matmulnbits", extra=quantized)
        verify_against_fp32(fp32_dir, int8_dir)
        if keep_fp32:
            shutil.rmtree(home / "models" / f"{name}-fp32", ignore_errors=True)
            shutil.move(str(fp32_dir), home / "models" / f"{name}-fp32")
    return int8_dir


def agreement(fp32_dir: Path, int8_dir: Path) -> list[tuple[str, str]]:
    """Greedy answers of the fp32 and int8 models to the fixed check questions."""
    from edge_rag.models.slm import SLM, GenerationConfig

    config = GenerationConfig(max_new_tokens=24)
    answers = []
    for folder in (fp32_dir, int8_dir):
        slm = SLM.from_path(folder, context_tokens=1024)
        answers.append([slm.generate(slm.chat(q), config).text.strip() for q in CHECK_QUESTIONS])
    return list(zip(*answers))


def verify_against_fp32(fp32_dir: Path, quantized_dir: Path) -> None:
    """Compare a quantized export with fp32 on the fixed questions; delete it and raise if it differs.

    The result is recorded in the quantized folder's manifest (``verified_against_fp32``).
    """
    _log(f"checking {quantized_dir.name} against fp32 on {len(CHECK_QUESTIONS)} fixed questions ...")
    judge_agreement(agreement(fp32_dir, quantized_dir), quantized_dir)


def judge_agreement(pairs: list[tuple[str, str]], quantized_dir: Path) -> None:
    """Record (fp32, quantized) answer pairs in the manifest; delete the folder and raise when
    more than one answer changed."""
    same = sum(_same_answer(a, b, key) for (a, b), (*_, key) in zip(pairs, CHECKS))
    identical = sum(_normalise(a) == _normalise(b) for a, b in pairs)
    manifest_path = quantized_dir / MANIFEST
    manifest = json.loads(manifest_path.read_text())
    manifest["verified_against_fp32"] = (f"{same}/{len(pairs)} same answers, "
                                         f"{identical}/{len(pairs)} identical texts")
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    _log(f"{quantized_dir.name} gives the fp32 answer on {same} of {len(pairs)} questions")
    if same < MIN_AGREEMENT:
        shutil.rmtree(quantized_dir)
        raise EdgeRagError(f"the quantized model changed {len(pairs) - same} of {len(pairs)} "
                           "answers; refusing to ship it")


def _same_answer(first: str, second: str, key: str) -> bool:
    return bool(re.search(key, first.lower())) == bool(re.search(key, second.lower()))


def _normalise(text: str) -> str:
    return " ".join("".join(c for c in text.lower() if c.isalnum() or c.isspace()).split())


def _load_to_hf_folder(source: str, work: Path, out: Path) -> tuple[Path, str, tuple[str, ...]]:
    if source in PACKAGED:
        model = PACKAGED[source]
        gguf = assemble_gguf(model, work)
        return _gguf_to_hf(gguf, out), f"pypi:{','.join(model.packages)} sha256:{model.sha256}", \
            model.stop_tokens
    path = Path(source)
    if path.suffix == ".gguf" and path.is_file():
        return _gguf_to_hf(path, out), f"gguf:{path} sha256:{file_sha256(path)}", \
            ("<|im_end|>", "<|endoftext|>")
    if (path / "config.json").is_file():
        _check_architecture(json.loads((path / "config.json").read_text())["model_type"], source)
        return path, f"hf:{path}", ("<|im_end|>", "<|endoftext|>")
    raise ModelNotFound(f"{source}: not a packaged SLM ({', '.join(PACKAGED)}), .gguf file or "
                        "Hugging Face model folder")


def _gguf_to_hf(gguf: Path, out: Path) -> Path:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    _log(f"loading {gguf.name} (dequantised to fp32) ...")
    with quiet():
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name,
                                                     torch_dtype=torch.float32)
        _check_architecture(model.config.model_type, str(gguf))
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model.save_pretrained(out)
        tokenizer.save_pretrained(out)
    return out


def _check_architecture(model_type: str, source: str) -> None:
    if model_type not in SUPPORTED_ARCHITECTURES:
        raise EdgeRagError(f"{source}: architecture {model_type!r} is not supported; "
                           f"supported: {', '.join(SUPPORTED_ARCHITECTURES)}")


def _onnx_export(hf_dir: Path, out: Path) -> None:
    from optimum.exporters.onnx import main_export

    with quiet():
        main_export(str(hf_dir), output=str(out), task="text-generation-with-past",
                    library_name="transformers", device="cpu", do_validation=False)


def prepare_graph(model) -> None:
    """Compute logits for the last position only, and untie a transposed embedding lm_head.

    The exported graph returns logits for every prompt position ([B, S, vocab]: 600 MB for a
    1,000-token Qwen prompt) although generation reads only the last. With tied embeddings the
    lm_head multiplies by Transpose(embedding), which onnxruntime folds into a second fp32 copy
    that the weight quantizer cannot see; a transposed initializer lets it quantize the head.
    """
    import numpy as np
    from onnx import helper, numpy_helper

    graph = model.graph
    head = next(n for n in graph.node if "logits" in n.output)
    hidden = head.input[0]
    starts = numpy_helper.from_array(np.array([-1], dtype=np.int64), "edge_rag_last_start")
    ends = numpy_helper.from_array(np.array([2**62], dtype=np.int64), "edge_rag_last_end")
    axes = numpy_helper.from_array(np.array([1], dtype=np.int64), "edge_rag_last_axis")
    graph.initializer.extend([starts, ends, axes])
    graph.node.append(helper.make_node("Slice", [hidden, starts.name, ends.name, axes.name],
                                       ["edge_rag_last_hidden"], name="edge_rag_last_position"))
    head.input[0] = "edge_rag_last_hidden"
    _untie_head(graph, head)


def _untie_head(graph, head) -> None:
    from onnx import numpy_helper

    producer = next((n for n in graph.node if head.input[1] in n.output), None)
    if producer is None or producer.op_type != "Transpose":
        return
    weights = {i.name: i for i in graph.initializer}
    source = weights.get(producer.input[0])
    if source is None:
        return
    transposed = numpy_helper.from_array(numpy_helper.to_array(source).T.copy(), "lm_head.weight")
    graph.initializer.append(transposed)
    head.input[1] = transposed.name
    if not any(producer.output[0] in n.input for n in graph.node):
        graph.node.remove(producer)


def _quantize(model_path: Path, out: Path) -> None:
    import onnx
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    model = onnx.load(str(model_path))
    prepare_graph(model)
    with quiet():
        quantizer = MatMulNBitsQuantizer(model, bits=8, block_size=BLOCK_SIZE, is_symmetric=True,
                                         accuracy_level=4)
        quantizer.process()
    # Weights in a side file let onnxruntime map them instead of copying a parsed protobuf:
    # peak RSS at load drops by about the model's size.
    onnx.save_model(quantizer.model.model, str(out), save_as_external_data=True,
                    all_tensors_to_one_file=True, location=out.name + "_data", size_threshold=1024)


def _write_folder(model: Path, hf_dir: Path, dest: Path, name: str, origin: str,
                  stops: tuple[str, ...], quantization: str, extra: Path | None = None) -> None:
    config = json.loads((hf_dir / "config.json").read_text())
    tokenizer_config = json.loads((hf_dir / "tokenizer_config.json").read_text())
    template = _chat_template(hf_dir, tokenizer_config)
    if "<|im_start|>" not in template:
        raise EdgeRagError(f"{name}: only ChatML chat templates are supported by the runtime")
    tmp = dest.with_name(dest.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    shutil.copyfile(model, tmp / "model.onnx")
    if extra is not None and (extra / "model.onnx_data").is_file():
        shutil.copyfile(extra / "model.onnx_data", tmp / "model.onnx_data")
    shutil.copyfile(hf_dir / "tokenizer.json", tmp / "tokenizer.json")
    (tmp / "chat_template.jinja").write_text(template, encoding="utf-8")
    manifest = {
        "kind": "slm", "name": f"{name}-{quantization.split('-')[0]}", "source": origin,
        "architecture": config["model_type"], "quantization": quantization,
        "sha256": file_sha256(tmp / "model.onnx"), "chat_format": "chatml",
        "context_length": int(config.get("max_position_embeddings", 2048)),
        "num_layers": int(config["num_hidden_layers"]),
        "num_kv_heads": int(config.get("num_key_value_heads", config["num_attention_heads"])),
        "head_dim": int(config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]),
        "vocab_size": int(config["vocab_size"]), "stop_tokens": list(stops),
        "files": sorted(p.name for p in tmp.iterdir() if p.name.startswith(("model", "tok"))),
    }
    if (tmp / "model.onnx_data").is_file():
        manifest["sha256_data"] = file_sha256(tmp / "model.onnx_data")
    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)


def _chat_template(hf_dir: Path, tokenizer_config: dict) -> str:
    template = tokenizer_config.get("chat_template") or ""
    if not template and (hf_dir / "chat_template.jinja").is_file():
        template = (hf_dir / "chat_template.jinja").read_text(encoding="utf-8")
    if not template and '"<|im_start|>"' in (hf_dir / "tokenizer.json").read_text(encoding="utf-8"):
        template = CHATML_TEMPLATE  # the GGUF carries no template but the ChatML tokens
    return template


def _pairs(model: PackagedSlm) -> list[tuple[str, str]]:
    packages = model.packages if len(model.packages) == len(model.files) else \
        model.packages * len(model.files)
    return list(zip(packages, model.files))


def _package_dir(package: str, name: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFound(f"{name}: package {package} is missing; run: edge-rag export slm {name} "
                            "--install")
    return Path(next(iter(spec.submodule_search_locations)))
