"""GGUF models as a user meets them: named by the file's general.name, the whole sha256 recorded,
the dequantisation bar silenced by --no-progress, and the cache they fill seen and freed."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
import torch

from matbench.cli import main
from matbench.errors import MatbenchError
from matbench.models.gguf import (
    SOURCE_FILE,
    convert_gguf,
    gguf_cache_dir,
    gguf_name,
    one_gguf_parse,
    quiet_gguf_progress,
)
from matbench.models.loading import model_name
from matbench.models.sources import ModelSource, resolve_source
from tests.test_cli import one_line_error


def write_gguf(path: Path, name: str | None) -> Path:
    """A metadata-only GGUF file whose name comes after an integer, a string array and a float array."""
    import gguf

    writer = gguf.GGUFWriter(str(path), arch="llama")
    writer.add_uint32("a.count", 3)
    writer.add_array("tokenizer.ggml.tokens", ["a", "bb", "ccc"])
    writer.add_array("x.scores", [1.0, 2.0])
    if name is not None:
        writer.add_name(name)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_the_name_is_read_from_the_header_past_other_keys(tmp_path):
    assert gguf_name(write_gguf(tmp_path / "a.gguf", "Tiny Test Model")) == "Tiny Test Model"
    assert gguf_name(write_gguf(tmp_path / "b.gguf", None)) is None
    (tmp_path / "c.gguf").write_bytes(b"GGUF\x03\x00\x00\x00\x00")  # cut short: no name, not an error
    assert gguf_name(tmp_path / "c.gguf") is None


@pytest.mark.slow
def test_the_header_reader_agrees_with_gguf_py_on_an_offline_model():
    from gguf import GGUFReader

    source = resolve_source("smollm2-135m")
    path = Path(source.location) / source.gguf_file
    field = GGUFReader(path).fields["general.name"]
    assert gguf_name(path) == bytes(field.parts[field.data[0]]).decode() == "Smollm2 135M 8k Lc100K Mix1 Ep2"


def test_a_local_gguf_file_is_named_by_its_metadata_and_an_alias_by_itself(tmp_path):
    named = write_gguf(tmp_path / "weights-q4.gguf", "Tiny Test Model")
    assert model_name(resolve_source(str(named))) == "Tiny Test Model"
    unnamed = write_gguf(tmp_path / "other-q8.gguf", None)
    assert model_name(resolve_source(str(unnamed))) == "other-q8"
    assert model_name(ModelSource("smollm2-135m", str(tmp_path), "weights-q4.gguf")) == "smollm2-135m"
    assert model_name(ModelSource("org/model", "org/model")) == "org/model"


def test_without_progress_the_dequantisation_bar_is_silenced_and_restored(capsys):
    from transformers import modeling_gguf_pytorch_utils as gguf_utils

    bar = gguf_utils.tqdm
    with quiet_gguf_progress(False):
        assert gguf_utils.tqdm is not bar
        list(gguf_utils.tqdm(range(3), desc="dequantising"))
    assert gguf_utils.tqdm is bar and "dequantising" not in capsys.readouterr().err
    with quiet_gguf_progress(True):
        list(gguf_utils.tqdm(range(3), desc="dequantising"))
    assert "dequantising" in capsys.readouterr().err


def test_a_conversion_without_progress_loads_under_the_silenced_bar(tmp_path, monkeypatch, tokenizer):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers import modeling_gguf_pytorch_utils as gguf_utils

    monkeypatch.setenv("MATBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(AutoTokenizer, "from_pretrained", lambda *args, **kwargs: tokenizer)  # read first
    source = resolve_source(str(write_gguf(tmp_path / "m.gguf", "M")))
    seen = []

    def spy(*args, **kwargs):
        seen.append(getattr(gguf_utils.tqdm, "keywords", {}).get("disable"))
        raise ValueError("stop here")

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", spy)
    for progress in (False, True):
        with pytest.raises(Exception, match="could not load GGUF file 'm.gguf'"):
            convert_gguf(source, False, progress)
    assert seen == [True, None]


def test_transformers_parses_each_gguf_file_once_inside_the_block(tmp_path, monkeypatch):
    """transformers builds a GGUFReader for every config, tokenizer and weight read (four whole
    parses per conversion); inside `one_gguf_parse` one per file serves them all, and a rewritten
    file is parsed anew."""
    import gguf
    import numpy as np
    from transformers import AutoConfig
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    built = []

    class CountingReader(gguf.GGUFReader):
        def __init__(self, path, mode="r"):
            built.append(Path(path).name)
            super().__init__(path, mode)

    monkeypatch.setattr(gguf, "GGUFReader", CountingReader)
    first, second = write_gguf(tmp_path / "a.gguf", "A"), write_gguf(tmp_path / "b.gguf", "B")
    with one_gguf_parse(ModelSource("folder", str(tmp_path), None)):  # not a GGUF source: nothing changes
        assert gguf.GGUFReader is CountingReader
    source = resolve_source(str(first))
    with one_gguf_parse(source):
        assert gguf.GGUFReader is not CountingReader
        for _ in range(3):
            assert AutoConfig.from_pretrained(tmp_path, gguf_file="a.gguf").vocab_size == 3
        assert load_gguf_checkpoint(str(second))["config"]["_model_name_or_path"] == "B"
        assert load_gguf_checkpoint(str(first))["config"]["_model_name_or_path"] == "A"
        with one_gguf_parse(source):  # nested (load_model around convert_gguf): the outer readers serve
            assert load_gguf_checkpoint(str(second))["config"]["_model_name_or_path"] == "B"
        assert built == ["a.gguf", "b.gguf"]
        write_gguf(first, "A2")
        os.utime(first, ns=(1, 1))  # a rewrite within the clock's resolution still changes the key
        assert load_gguf_checkpoint(str(first))["config"]["_model_name_or_path"] == "A2"
        assert built == ["a.gguf", "b.gguf", "a.gguf"]
        inside = gguf.GGUFReader(str(first))
    assert gguf.GGUFReader is CountingReader
    load_gguf_checkpoint(str(first))
    assert built == ["a.gguf", "b.gguf", "a.gguf", "a.gguf"]  # outside the block: a parse per read
    # the reader handed out inside reads the mapping as a plain ndarray, field for field the same
    outside = gguf.GGUFReader(str(first))
    assert type(inside.data) is np.ndarray and isinstance(outside.data, np.memmap)
    assert list(inside.fields) == list(outside.fields) and len(inside.fields) == 8
    for key, field in outside.fields.items():
        mine = inside.fields[key]
        assert mine.types == field.types and mine.data == field.data
        assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(mine.parts, field.parts))


def test_transformers_reads_each_gguf_files_metadata_once_inside_the_block(tmp_path, monkeypatch):
    """The metadata-to-config loop (`load_gguf_checkpoint` without tensors) runs once per file
    inside `one_gguf_parse`; each caller gets its own copy, and tensor reads pass through."""
    from transformers import AutoConfig
    from transformers import modeling_gguf_pytorch_utils as gguf_utils

    real, calls = gguf_utils.load_gguf_checkpoint, []

    def counting(path, return_tensors=False, model_to_load=None, torch_dtype=None):
        calls.append((Path(path).name, torch_dtype))
        return real(path, return_tensors, model_to_load, torch_dtype)

    monkeypatch.setattr(gguf_utils, "load_gguf_checkpoint", counting)
    first = write_gguf(tmp_path / "a.gguf", "A")
    with one_gguf_parse(resolve_source(str(first))):
        assert gguf_utils.load_gguf_checkpoint is not counting
        for _ in range(3):
            assert AutoConfig.from_pretrained(tmp_path, gguf_file="a.gguf").vocab_size == 3
        given = gguf_utils.load_gguf_checkpoint(str(first))
        given["config"].clear()  # a caller's changes stay its own
        assert gguf_utils.load_gguf_checkpoint(str(first))["config"]["_model_name_or_path"] == "A"
        assert calls == [("a.gguf", None)]
        gguf_utils.load_gguf_checkpoint(str(first), torch_dtype=torch.float16)  # not the metadata-only call
        write_gguf(first, "A2")
        os.utime(first, ns=(1, 1))
        assert gguf_utils.load_gguf_checkpoint(str(first))["config"]["_model_name_or_path"] == "A2"
        assert calls == [("a.gguf", None), ("a.gguf", torch.float16), ("a.gguf", None)]
    assert gguf_utils.load_gguf_checkpoint is counting


def test_loading_and_converting_a_gguf_file_run_inside_one_parse(tmp_path, monkeypatch, tokenizer):
    """load_model reads the config and converts under one `one_gguf_parse`; convert_gguf opens its own
    for the weights and tokenizer (a nested block keeps the outer one's readers); `matbench show`
    reads the config and the tokenizer under one."""
    import gguf
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from matbench.commands.show import weightless_engine
    from matbench.models import loading

    monkeypatch.setenv("MATBENCH_CACHE", str(tmp_path / "cache"))
    real, seen = gguf.GGUFReader, []

    def spy(step):
        def record(*args, **kwargs):
            seen.append((step, gguf.GGUFReader is not real))
            raise ValueError("stop here")

        return record

    path = str(write_gguf(tmp_path / "m.gguf", "M"))
    monkeypatch.setattr(AutoTokenizer, "from_pretrained", lambda *args, **kwargs: tokenizer)  # read first
    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", spy("weights"))
    with pytest.raises(Exception, match="could not load GGUF file 'm.gguf'"):
        convert_gguf(resolve_source(path), False)
    monkeypatch.setattr(loading, "load_config", spy("config"))
    with pytest.raises(ValueError, match="stop here"):
        loading.load_model(path)
    with pytest.raises(ValueError, match="stop here"):
        weightless_engine(path)
    assert seen == [("weights", True), ("config", True), ("config", True)] and gguf.GGUFReader is real


def test_a_converted_folder_records_its_source_and_the_whole_sha256(tmp_path, monkeypatch):
    monkeypatch.setenv("MATBENCH_CACHE", str(tmp_path / "cache"))
    path = write_gguf(tmp_path / "m.gguf", "Tiny Test Model")
    source = resolve_source(str(path))
    target = gguf_cache_dir(source)
    target.mkdir(parents=True)
    (target / "config.json").write_text("{}")  # converted by an earlier matbench: no source recorded
    assert convert_gguf(source, False) == target
    recorded = json.loads((target / SOURCE_FILE).read_text())
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert recorded == {
        "gguf_file": str(path.resolve()),
        "name": "Tiny Test Model",
        "sha256": digest,
        "bytes": path.stat().st_size,
    }
    assert target.name == digest[:24]


def test_a_gguf_models_revision_groups_old_prefixes_with_whole_digests():
    from matbench.leaderboard.collect import model_revision
    from matbench.results.schema import ResultsFile

    digest = "ab" * 32
    results = ResultsFile.model_construct(
        config=type(
            "C", (), {"model": type("M", (), {"commit_hash": None, "revision": None, "gguf_sha256": digest})()}
        )()
    )
    assert model_revision(results) == "gguf:" + digest[:24]


def _fill(root: Path) -> dict[str, int]:
    converted = root / "gguf" / "0123456789abcdef01234567"
    converted.mkdir(parents=True)
    (converted / "model.safetensors").write_bytes(b"x" * 5000)
    (converted / SOURCE_FILE).write_text(json.dumps({"gguf_file": "/models/m.gguf", "name": "M"}))
    assembled = root / "qwen2.5-coder-0.5b"
    assembled.mkdir()
    (assembled / "q.gguf").write_bytes(b"y" * 3000)
    return {
        "gguf/0123456789abcdef01234567": sum(f.stat().st_size for f in converted.iterdir()),
        "qwen2.5-coder-0.5b": 3000,
    }


def test_cache_list_shows_each_entry_its_size_and_source(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MATBENCH_CACHE", str(tmp_path))
    sizes = _fill(tmp_path)
    assert main(["cache", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{tmp_path}: 2 entries, {sum(sizes.values()) / 1e9:.2f} GB"
    assert lines[1].split()[0] == "gguf/0123456789abcdef01234567" and lines[1].endswith(
        "converted GGUF: M <- /models/m.gguf"
    )
    assert lines[2].split()[0] == "qwen2.5-coder-0.5b" and lines[2].endswith("assembled offline model: q.gguf")


def test_cache_clear_frees_what_it_names_and_refuses_what_is_not_there(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MATBENCH_CACHE", str(tmp_path))
    sizes = _fill(tmp_path)
    assert main(["cache", "clear", "gguf/nope"]) == 2
    assert "no cache entry 'gguf/nope'" in one_line_error(capsys.readouterr().err)
    assert main(["cache", "clear"]) == 2 and "or pass --all" in one_line_error(capsys.readouterr().err)
    assert main(["cache", "clear", "qwen2.5-coder-0.5b"]) == 0
    assert capsys.readouterr().out == f"cleared 1 entries, freed {sizes['qwen2.5-coder-0.5b'] / 1e9:.2f} GB\n"
    assert not (tmp_path / "qwen2.5-coder-0.5b").exists() and (tmp_path / "gguf").is_dir()
    assert main(["cache", "clear", "--all"]) == 0 and not any((tmp_path / "gguf").iterdir())


def test_a_missing_gguf_package_is_named_before_any_conversion(tmp_path, monkeypatch, capsys):
    """The GPU image lacked `gguf`: transformers then asks for torch and gguf, and matbench said the
    file was truncated or corrupt. A converted folder needs no gguf; a conversion says what to install."""
    import sys

    monkeypatch.setenv("MATBENCH_CACHE", str(tmp_path / "cache"))
    source = resolve_source(str(write_gguf(tmp_path / "m.gguf", "M")))
    monkeypatch.setitem(sys.modules, "gguf", None)  # `import gguf` raises ImportError
    with pytest.raises(ImportError):
        import gguf  # noqa: F401
    code = main(["eval", "--model", str(tmp_path / "m.gguf"), "--limit", "1", "--output", str(tmp_path / "o")])
    assert code == 2 and one_line_error(capsys.readouterr().err) == (
        "matbench: error: loading m.gguf needs the gguf package, which is not installed: run `pip install 'gguf>=0.10'`"
    )
    target = gguf_cache_dir(source)
    target.mkdir(parents=True)
    (target / "config.json").write_text("{}")
    assert convert_gguf(source, False) == target  # already converted: no gguf needed


def character_tokenizer():
    """A tokenizer that splits text into single characters, as Gemma 3's reads back from the copy
    transformers 5.17.0 saves of it."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    from matbench.models.gguf import SUBWORD_PROBE

    chars = sorted(set(SUBWORD_PROBE))
    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.BPE({c: i for i, c in enumerate(chars)}, [])))


def test_a_character_level_tokenizer_is_refused_before_the_weights_are_dequantised(tmp_path, monkeypatch):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from matbench.models.gguf import libraries

    monkeypatch.setenv("MATBENCH_CACHE", str(tmp_path / "cache"))
    source = resolve_source(str(write_gguf(tmp_path / "m.gguf", "M")))
    dequantised = []
    monkeypatch.setattr(AutoTokenizer, "from_pretrained", lambda *args, **kwargs: character_tokenizer())
    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", lambda *a, **k: dequantised.append(1))
    with pytest.raises(MatbenchError) as info:
        convert_gguf(source, False, progress=False)
    assert str(info.value) == (
        f"the tokenizer {libraries()} builds from m.gguf splits common English into pieces (44 tokens for 9 "
        "words, where a subword vocabulary gives about one each), so every prompt would be tokenized wrongly: "
        "upgrade transformers and "
        "tokenizers with `pip install -U transformers tokenizers`"
    )
    assert dequantised == [] and not list((tmp_path / "cache").rglob("config.json"))  # nothing cached


def test_a_tokenizer_that_comes_back_wrong_from_its_saved_copy_is_not_cached(tmp_path, monkeypatch, tiny_dir):
    """Built right in memory but read back character by character from its saved copy: refused
    after the conversion, and nothing is left in the cache."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    monkeypatch.setenv("MATBENCH_CACHE", str(tmp_path / "cache"))
    source = resolve_source(str(write_gguf(tmp_path / "m.gguf", "M")))
    good = AutoTokenizer.from_pretrained(tiny_dir)
    reads = []

    def tokenizer_from(location, **kwargs):
        reads.append("gguf" if kwargs.get("gguf_file") else "saved copy")
        return good if kwargs.get("gguf_file") else character_tokenizer()

    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    monkeypatch.setattr(AutoTokenizer, "from_pretrained", tokenizer_from)
    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", lambda *a, **k: model)
    with pytest.raises(
        MatbenchError, match=r"builds from m.gguf, saved and read back, splits common English into pieces \(44 tokens"
    ):
        convert_gguf(source, False, progress=False)
    assert reads == ["gguf", "saved copy"] and not list((tmp_path / "cache").rglob("*.json"))


def test_a_cached_conversion_holding_a_character_level_tokenizer_names_the_copy_to_clear(
    tmp_path, monkeypatch, tiny_dir
):
    from transformers import AutoConfig, AutoTokenizer

    from matbench.models import loading

    monkeypatch.setenv("MATBENCH_CACHE", str(tmp_path / "cache"))
    write_gguf(tmp_path / "m.gguf", "M")
    config = AutoConfig.from_pretrained(tiny_dir)
    monkeypatch.setattr(loading, "load_config", lambda *a: config)
    monkeypatch.setattr(loading, "check_servable", lambda *a: None)
    monkeypatch.setattr(loading, "convert_gguf", lambda *a: tiny_dir)  # converted earlier
    monkeypatch.setattr(AutoTokenizer, "from_pretrained", lambda *a, **k: character_tokenizer())
    with pytest.raises(MatbenchError) as info:
        loading.load_model(str(tmp_path / "m.gguf"), device="cpu")
    assert str(info.value) == (
        f"the tokenizer in {tiny_dir} (converted from m.gguf) splits common English into pieces (44 tokens for 9 "
        "words, where a subword vocabulary gives about one each), so every prompt would be tokenized wrongly: "
        "run `matbench cache clear` and "
        "load the model again (if it comes back so, upgrade transformers and tokenizers with "
        "`pip install -U transformers tokenizers`)"
    )


@pytest.mark.parametrize(("tokens", "refused"), [(9, False), (15, False), (16, True), (20, True)])
def test_the_subword_check_allows_at_most_1_7_tokens_per_common_word(tokens, refused):
    """20: Gemma 3's tokenizer as transformers 5.17.0 builds it from the GGUF file, in memory."""
    from matbench.models.gguf import check_subword_tokenizer

    class Counted:
        def encode(self, text, add_special_tokens=True):
            return list(range(tokens))

    if refused:
        with pytest.raises(MatbenchError, match=rf"^T splits common English into pieces \({tokens} tokens for 9 words"):
            check_subword_tokenizer(Counted(), "T")
    else:
        check_subword_tokenizer(Counted(), "T")
