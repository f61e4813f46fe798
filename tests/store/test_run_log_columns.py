"""The sampler's sample record and the samples table's columns are one list."""

from app.store.run_log import SAMPLE_COLUMNS, SampleRow


def test_a_sample_record_has_the_table_s_columns_in_their_order() -> None:
    assert SampleRow._fields == SAMPLE_COLUMNS
