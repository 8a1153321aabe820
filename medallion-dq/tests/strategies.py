"""Random inputs for the property tests on the real engine: rows of two nullable columns
(`a INT`, `b STRING`) and rule sets over them, NULLs included, as rule files allow them."""

from hypothesis import strategies as st

CONSTRAINTS = [
    "a >= 0",
    "a IS NOT NULL",
    "b IN ('x', 'y')",
    "length(b) > 1",
    "a + 1 > 2 OR b = 'z'",
    "NOT (a = 3)",
    "coalesce(b, 'x') <> 'y'",
    "a < 4 -- a comment in the rule",
]
rows = st.lists(
    st.tuples(
        st.one_of(st.none(), st.integers(-5, 5)),
        st.one_of(st.none(), st.sampled_from(["x", "y", "z", "zz", ""])),
    ),
    min_size=0,
    max_size=40,
)
rule_sets = st.lists(st.sampled_from(CONSTRAINTS), min_size=1, max_size=4, unique=True)
