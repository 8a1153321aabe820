"""Static checks of expectation constraints, before any data is touched.

A constraint must be one boolean SQL expression over the dataset's own columns: no statements, no
subqueries, and only functions on ALLOWED, Spark's built-ins whose answer depends on the row
alone: rule SQL is data a data owner edits, not code that reaches the JVM (DQ010).
Unknown columns can only be found against the real schema: the local runner does that in a dry
run of the pipeline graph.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

import sqlglot
from sqlglot import TokenType, exp
from sqlglot.errors import ParseError, TokenError

from medallion_dq.bounds import bound_errors
from medallion_dq.problems import DataQualityError, Problem


# The functions a rule may call: Spark's built-ins whose answer depends on the row alone,
# reviewed one by one against pyspark 4.2.0's `SHOW FUNCTIONS` (spark_functions.txt). It is an
# allow-list, so a function a later Spark adds is refused until someone reviews it here.
# Deliberately on it: the current date and time (`current_date()`, `now()`...: Spark fixes them
# once per query, and rules such as `order_ts <= current_timestamp()` need them); URL text
# functions (`parse_url`, `url_decode`: text in, text out, nothing is fetched); aggregates, which
# a row rule refuses anyway (DQ009) and a contract's `count(*)` query needs.
def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


ALLOWED = _names(
    """
    and or not in between like ilike rlike regexp regexp_like case when if ifnull nullif
    nullifzero zeroifnull nvl nvl2 coalesce equal_null greatest least isnull isnotnull isnan nanvl
    cast try_cast bigint binary boolean date decimal double float int smallint string timestamp
    tinyint time typeof collate collation

    abs acos acosh asin asinh atan atan2 atanh bin bround cbrt ceil ceiling conv cos cosh cot csc
    degrees div e exp expm1 factorial floor hex hypot ln log log10 log1p log2 mod negative pi pmod
    positive pow power radians rint round sec sign signum sin sinh sqrt tan tanh try_add
    try_divide try_mod try_multiply try_subtract unhex width_bucket bit_count bit_get getbit
    bit_length shiftleft shiftright shiftrightunsigned

    ascii base64 btrim char char_length character_length chr concat concat_ws contains decode elt
    encode endswith find_in_set format_number format_string initcap instr lcase left len length
    levenshtein locate lower lpad ltrim luhn_check mask octet_length overlay position printf quote
    regexp_count regexp_extract regexp_extract_all regexp_instr regexp_replace regexp_substr
    repeat replace reverse right rpad rtrim sentences soundex space split split_part startswith
    substr substring substring_index to_binary to_char to_number to_varchar translate trim
    try_to_binary try_to_number ucase unbase64 upper is_valid_utf8 make_valid_utf8 validate_utf8
    try_validate_utf8 parse_url try_parse_url url_decode url_encode try_url_decode
    crc32 hash md5 sha sha1 sha2 xxhash64

    add_months convert_timezone curdate current_date current_time current_timestamp
    localtimestamp now date_add date_diff date_format date_from_unix_date date_part date_sub
    date_trunc dateadd datediff datepart day dayname dayofmonth dayofweek dayofyear extract
    from_unixtime from_utc_timestamp hour last_day make_date make_dt_interval make_interval
    make_time make_timestamp make_timestamp_ltz make_timestamp_ntz make_ym_interval minute month
    monthname months_between next_day quarter second time_bucket time_diff time_from_micros
    time_from_millis time_from_seconds time_to_micros time_to_millis time_to_seconds time_trunc
    timestamp_micros timestamp_millis timestamp_seconds timestampadd timestampdiff to_date to_time
    to_timestamp to_timestamp_ltz to_timestamp_ntz to_unix_timestamp to_utc_timestamp trunc
    try_make_interval try_make_timestamp try_make_timestamp_ltz try_make_timestamp_ntz try_to_date
    try_to_time try_to_timestamp unix_date unix_micros unix_millis unix_seconds unix_timestamp
    weekday weekofyear year

    array array_append array_compact array_contains array_distinct array_except array_insert
    array_intersect array_join array_max array_min array_position array_prepend array_remove
    array_repeat array_size array_sort array_union arrays_overlap arrays_zip cardinality
    element_at try_element_at flatten get map map_concat map_contains_key map_entries
    map_from_arrays map_from_entries map_keys map_values named_struct sequence size slice
    sort_array str_to_map struct
    aggregate exists filter forall map_filter map_zip_with reduce transform transform_keys
    transform_values zip_with

    from_csv from_json get_json_object json_array_length json_object_keys parse_json
    schema_of_csv schema_of_json schema_of_variant to_csv to_json to_variant_object try_parse_json
    try_variant_get variant_get is_variant_null is_valid_variant to_xml
    st_asbinary st_geogfromwkb st_geomfromwkb st_setsrid st_srid vector_cosine_similarity
    vector_inner_product vector_l2_distance vector_norm vector_normalize

    count count_if sum avg mean min max bool_and bool_or every some any try_avg try_sum
    """
)
AGGREGATES = _names("count count_if sum avg mean min max bool_and bool_or every try_avg try_sum")

# Why the others are refused, for the message (a function on neither list: not reviewed yet).
_REFUSED = {
    "reflect java_method try_reflect": (
        "calls Java code in the Spark JVM",
        "a rule is data, not code: compare the row's columns with built-in SQL functions",
    ),
    "input_file_name input_file_block_length input_file_block_start": (
        "reads which file the row came from, not the row",
        "judge the row's own columns (keep a file name as a column in bronze)",
    ),
    "current_user user session_user current_database current_schema current_catalog "
    "current_path current_timezone version spark_partition_id monotonically_increasing_id": (
        "reads the session, the engine or how the data is split, not the row",
        "a rule must give the same answer for the same row, wherever it runs",
    ),
    "rand randn random randstr uniform uuid shuffle": (
        "is nondeterministic",
        "a rule must give the same answer for the same row",
    ),
    "raise_error assert_true": (
        "stops the query with an error of its own",
        "use action: fail, which stops the update and names the rule",
    ),
    # A key written in a rule file is a secret committed to git, and aes_encrypt draws a random
    # IV (GCM): not a rule's business.
    "aes_encrypt aes_decrypt try_aes_decrypt": (
        "encrypts or decrypts with a key written in the rule",
        "keep keys out of rule files: decrypt upstream, judge the plain column",
    ),
    # The JVM's XML parsers have reached files and the network through external entities, and
    # from_protobuf reads a descriptor file named in its arguments.
    "xpath xpath_boolean xpath_double xpath_float xpath_int xpath_long xpath_number xpath_short "
    "xpath_string from_xml schema_of_xml from_avro to_avro schema_of_avro from_protobuf "
    "to_protobuf": (
        "parses with a JVM library that can read files or schemas named in its arguments",
        "parse the payload upstream (bronze, silver) and judge its columns",
    ),
    "explode explode_outer inline inline_outer posexplode posexplode_outer stack json_tuple "
    "variant_explode variant_explode_outer range read_files sql_keywords collations "
    "python_worker_logs": (
        "makes rows or reads a table, it does not judge one",
        "a rule is one boolean expression over the row's columns",
    ),
}
REFUSED = {name: why for names, why in _REFUSED.items() for name in names.split()}
# sqlglot reads these niladic forms (no parentheses) as functions of their own.
_SESSION_NODES = (exp.CurrentUser, exp.SessionUser)
_CALLABLE_TOKENS = (TokenType.VAR, TokenType.IDENTIFIER)


@cache
def spark_builtin_functions() -> frozenset[str]:
    """Names from `SHOW FUNCTIONS` of pyspark 4.2.0, shipped with the package."""
    text = resources.files(__package__).joinpath("spark_functions.txt").read_text()
    return frozenset(text.split())


def constraint_errors(constraint: object) -> list[tuple[str, str, str]]:
    """Return (code, message, fix) for each reason the constraint is refused."""
    if not isinstance(constraint, str) or not constraint.strip():
        return [
            (
                "DQ005",
                "constraint must be a non-empty SQL string",
                "write a boolean SQL expression, e.g. amount >= 0",
            )
        ]
    try:
        statements = [s for s in sqlglot.parse(constraint, read="spark") if s is not None]
    except (ParseError, TokenError) as error:
        # sqlglot's words without its internals: a class path, and a place in the condition
        first = re.sub(r"<class '[\w.]*\.(\w+)'>", r"\1", str(error).splitlines()[0])
        first = re.sub(r"\. Line (\d+), Col: (\d+)\.?", r" (column \2 of the condition)", first)
        first = first[:160]
        return [
            ("DQ007", f"SQL does not parse: {first}", "check parentheses, quotes and operators")
        ]
    except RecursionError:
        return [("DQ007", "SQL does not parse: nested too deeply", "simplify the expression")]
    if len(statements) != 1:
        return [
            (
                "DQ008",
                "constraint holds more than one statement (';')",
                "keep one boolean expression, without ';'",
            )
        ]
    tree = statements[0]
    if isinstance(tree, exp.Subquery):
        return [
            (
                "DQ009",
                "subqueries are not allowed in a constraint",
                "check other tables in a separate aggregate view with expect_or_fail",
            )
        ]
    if not isinstance(tree, exp.Condition) or isinstance(tree, exp.Query):
        kind = type(tree).__name__.upper()
        return [
            (
                "DQ008",
                f"constraint is an SQL {kind} statement, not an expression",
                "write a boolean expression over the row's columns",
            )
        ]
    errors = []
    if any(True for _ in tree.find_all(exp.Query)):
        errors.append(
            (
                "DQ009",
                "subqueries are not allowed in a constraint",
                "check other tables in a separate aggregate view with expect_or_fail",
            )
        )
    elif any(True for _ in tree.find_all(exp.AggFunc, exp.Window)) or any(
        f.name.lower() in AGGREGATES for f in tree.find_all(exp.Anonymous)
    ):
        errors.append(
            (
                "DQ009",
                "aggregate and window functions are not allowed in a constraint: a rule judges one row",
                "check across rows in a separate aggregate view with expect_or_fail",
            )
        )
    return errors + function_errors(constraint, tree) + bound_errors(tree)


def calls(text: str, tree: exp.Expr) -> dict[str, bool]:
    """`{name: qualified}` of every function `text` calls, lower case, however it is written:
    any case, backticked, qualified (`system.builtin.reflect`), in a lambda, or niladic
    (`current_user`). Read from the tokens, as written (sqlglot's tree renames many functions,
    `instr` to StrPosition), and from the tree's unknown functions and niladic forms."""
    known = spark_builtin_functions() | ALLOWED
    found: dict[str, bool] = {}
    tokens = sqlglot.tokenize(text, read="spark")
    for before, token, after in zip([None, *tokens], tokens, [*tokens[1:], None], strict=False):
        if after is None or after.token_type != TokenType.L_PAREN:
            continue
        name = token.text.lower()
        if token.token_type not in _CALLABLE_TOKENS and name not in known:
            continue  # syntax, not a call: IN (, NOT (, VARCHAR(3)
        if before is not None and before.token_type == TokenType.ALIAS:
            continue  # a type: CAST(a AS varchar(3))
        qualified = before is not None and before.token_type == TokenType.DOT
        found[name] = found.get(name, False) or qualified
    for func in tree.find_all(exp.Anonymous, *_SESSION_NODES):
        name = (func.name if isinstance(func, exp.Anonymous) else func.sql_name()).lower()
        found.setdefault(name, False)
    return found


def function_errors(text: str, tree: exp.Expr) -> list[tuple[str, str, str]]:
    """DQ010 for each function of `text` (parsed as `tree`) that is not on the allow-list."""
    builtins = spark_builtin_functions()
    errors = []
    for name, qualified in calls(text, tree).items():
        if name in REFUSED:
            why, fix = REFUSED[name]
            errors.append(("DQ010", f"function {name}() {why}", fix))
        elif name not in builtins | ALLOWED:
            errors.append(
                (
                    "DQ010",
                    f"function {name}() is not a Spark built-in (Python UDFs and external calls "
                    "are not allowed)",
                    "use built-in SQL functions only",
                )
            )
        elif name not in ALLOWED:
            errors.append(
                (
                    "DQ010",
                    f"function {name}() is not on medallion-dq's list of functions a rule may call",
                    "use another built-in; a new one is added to medallion_dq/constraints.py "
                    "once reviewed",
                )
            )
        elif qualified:
            errors.append(
                (
                    "DQ010",
                    f"function {name}() is called by a qualified name: a catalog's function, "
                    "not the built-in",
                    f"call the built-in by its plain name, {name}(...)",
                )
            )
    return errors


def referenced_columns(constraint: str) -> set[str]:
    """Column names a constraint reads (lower case), used to explain unknown-column errors."""
    try:
        tree = sqlglot.parse_one(constraint, read="spark")
    except (ParseError, TokenError):
        return set()
    return {c.name.lower() for c in tree.find_all(exp.Column)}


def top_level_columns(constraint: str) -> set[str]:
    """The columns of the row a constraint reads, lower case: `payload.amount` reads `payload`;
    a lambda's parameters are not columns. An example row gives exactly these."""
    try:
        tree = sqlglot.parse_one(constraint, read="spark")
    except (ParseError, TokenError):
        return set()
    return {column.parts[0].name.lower() for column in tree.find_all(exp.Column)}


def check_expectation(name: object, constraint: object, where: str) -> None:
    """Raise DataQualityError (DQ005, constraint codes) for a bad name or constraint at `where`."""
    problems = []
    if not isinstance(name, str) or not name.strip():
        problems.append(
            Problem(
                "DQ005",
                where,
                f"expectation name must be a non-empty string, got {name!r}",
                "name it, e.g. 'valid_amount'",
            )
        )
    for code, message, fix in constraint_errors(constraint):
        problems.append(Problem(code, where, message, fix, name if isinstance(name, str) else None))
    if problems:
        raise DataQualityError(problems)
