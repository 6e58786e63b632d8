"""stg.config's one reader: a missing config binds nothing, entries that bind no symbol
(a dtype note, an i1 flag) are skipped, a config that is not a dictionary is an error."""

import pytest
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp, StringAttr, i1, i64

from stagec.dialects.stg.config import CONFIG, ConfigError, config_bindings, parse_bindings, set_config


def test_missing_config_binds_nothing():
    assert config_bindings(ModuleOp([])) == {}


def test_only_integer_symbol_entries_bind():
    module = ModuleOp([])
    module.attributes[CONFIG] = DictionaryAttr({
        "H": IntegerAttr(64, i64), "dtype": StringAttr("bf16"), "tied": IntegerAttr(1, i1),
    })
    assert config_bindings(module) == {"H": 64}


def test_config_that_is_not_a_dictionary_is_an_error():
    module = ModuleOp([])
    module.attributes[CONFIG] = StringAttr("H=64")
    with pytest.raises(ConfigError, match="stg.config must be a dictionary"):
        config_bindings(module)


def test_written_config_lists_symbols_in_table_order_and_reads_back():
    module = ModuleOp([])
    set_config(module, {"V": 128, "Z": 1, "H": 64, "L": 2})
    assert list(module.attributes[CONFIG].data) == ["H", "L", "V", "Z"]
    assert config_bindings(module) == {"H": 64, "L": 2, "V": 128, "Z": 1}


def test_option_text_parses_and_rejects_a_missing_value():
    assert parse_bindings("H=64, V=128") == {"H": 64, "V": 128}
    with pytest.raises(ConfigError, match="'H' does not bind a symbol to an integer"):
        parse_bindings("H")
