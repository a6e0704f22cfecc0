"""The NEWS transliteration reader now lives in `aligners.data.labeled` (`NamePair`,
`read_news_translit`); these names stay importable for `aligners.data.datasets` and the LCLR
tests."""

from aligners.data.labeled import NamePair, read_news_translit

__all__ = ["NamePair", "read_news_translit"]
