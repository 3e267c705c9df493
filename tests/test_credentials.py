"""Passwords are masked by parsing, whatever characters they hold, and by value wherever the
settings' passwords appear in free text."""

from __future__ import annotations

import doctest
import io
import re
import traceback
from urllib.parse import quote, unquote, urlsplit

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from medallion_assets import credentials
from medallion_assets.cli.common import MaskedStream
from medallion_assets.credentials import (
    MASK,
    MaskedError,
    encoded_url,
    mask_credentials,
    masked_exception,
    url_password,
)
from medallion_assets.settings import MedallionSettings

# Any character a password may hold: '/', '#', '?', '@', ':', space, '%', quotes, unicode.
passwords = st.text(min_size=1, max_size=40)
# A raw (unencoded) password may hold anything but a line break, which ends a URL in text.
raw_passwords = st.text(min_size=1, max_size=40).filter(lambda p: "\n" not in p)
users = st.from_regex(r"[a-z_][a-z0-9_]{0,11}", fullmatch=True)
hosts = st.sampled_from(["127.0.0.1", "db.example.com", "localhost", "[::1]", "warehouse-1"])
ports = st.integers(min_value=1, max_value=65535)
databases = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True)
schemes = st.sampled_from(["postgresql", "postgres", "redshift", "postgresql+psycopg"])


def test_the_module_examples_hold():
    assert doctest.testmod(credentials).failed == 0


@pytest.mark.slow
@given(schemes, users, passwords, hosts, ports, databases)
@example("postgresql", "u", "SEC/RETPW", "h", 5432, "db")  # the one issue 11 saw leak
@settings(max_examples=300)
def test_a_percent_encoded_password_is_masked_and_the_rest_kept(scheme, user, pw, host, port, db):
    url = f"{scheme}://{user}:{quote(pw, safe='')}@{host}:{port}/{db}"
    assert mask_credentials(url) == f"{scheme}://{user}:{MASK}@{host}:{port}/{db}"


@given(schemes, users, raw_passwords, hosts, ports, databases)
@example("postgresql", "u", "SEC/RETPW", "h", 5432, "db")
@example("postgresql", "u", "a@b c@d:1/e?f#g", "h", 5432, "db")
@example("postgresql", "u", "x://y:z@", "h", 1, "db")
@settings(max_examples=300)
def test_a_raw_password_is_masked_whatever_it_holds(scheme, user, pw, host, port, db):
    url = f"{scheme}://{user}:{pw}@{host}:{port}/{db}?sslmode=require"
    assert mask_credentials(url) == f"{scheme}://{user}:{MASK}@{host}:{port}/{db}?sslmode=require"


@given(users, raw_passwords, hosts, ports, databases)
@settings(max_examples=200)
def test_a_url_in_an_error_message_is_masked(user, pw, host, port, db):
    url = f"postgresql://{user}:{pw}@{host}:{port}/{db}"
    text = f'Traceback:\n  ConnectionError: cannot connect to "{url}": connection refused\ndone'
    masked = f'cannot connect to "postgresql://{user}:{MASK}@{host}:{port}/{db}": connection'
    assert masked in mask_credentials(text)


@given(users, passwords, ports, databases)
@settings(max_examples=200)
def test_the_settings_passwords_are_masked_anywhere_in_any_printed_form(user, pw, port, db):
    url = f"postgresql://{user}:{quote(pw, safe='')}@db.example.com:{port}/{db}"
    secrets = MedallionSettings.from_env({"MEDALLION_WAREHOUSE_URL": url}).secrets
    # A driver's message quoting the password bare, percent-encoded, and in a URL.
    text = f"auth failed for {pw!r} ({quote(pw, safe='')}) at {url}"
    masked = mask_credentials(text, secrets)
    if len(pw) >= credentials.MIN_KNOWN_SECRET:
        assert pw not in masked and quote(pw, safe="") not in masked
    assert f"{user}:{MASK}@db.example.com:{port}/{db}" in masked


@given(passwords)
@settings(max_examples=200)
def test_a_key_value_password_is_masked_quoted_or_not(pw):
    quoted = "'" + pw.replace("\\", "\\\\").replace("'", "\\'") + "'"
    dsn = f"host=db user=loader password={quoted} dbname=analytics"
    assert url_password(dsn) == pw
    assert mask_credentials(dsn) == f"host=db user=loader password={MASK} dbname=analytics"


def reads_as_a_port(pw: str) -> bool:
    """``u:1234/x@h`` is also host u, port 1234: the one raw form left as written."""
    return re.match(r"[0-9]+[/?#]", pw) is not None


@given(
    users,
    raw_passwords.filter(lambda p: "%" not in p and not reads_as_a_port(p)),
    hosts,
    ports,
    databases,
)
@settings(max_examples=200)
def test_a_raw_password_reaches_the_driver_as_written(user, pw, host, port, db):
    parts = urlsplit(encoded_url(f"postgresql://{user}:{pw}@{host}:{port}/{db}"))
    assert unquote(parts.password or "") == pw == url_password(f"postgresql://{user}:{pw}@{host}")
    assert (parts.username, parts.port, parts.path) == (user, port, f"/{db}")
    assert f"[{parts.hostname}]" == host if host.startswith("[") else parts.hostname == host


@given(passwords)
def test_an_encoded_url_is_left_as_the_user_wrote_it(pw):
    url = f"postgresql://loader:{quote(pw, safe='')}@db:5432/x"
    assert encoded_url(url) == url and url_password(url) == pw


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://db:5432/x?application_name=me@corp",
        "postgresql://loader@db:5432/x?application_name=me@corp",
        "postgresql://loader@db/x",
        "postgresql://[::1]/x?application_name=me@corp",
        "duckdb:///tmp/warehouse.duckdb",
        "host=db password=x dbname=y",
    ],
)
def test_a_url_without_a_raw_password_is_left_alone(url):
    assert encoded_url(url) == url


def test_a_user_holding_an_at_sign_keeps_the_password_apart():
    url = "postgresql://loader@server:pa/ss@db.example.com:5432/x"
    assert mask_credentials(url) == "postgresql://loader@server:***@db.example.com:5432/x"
    parts = urlsplit(encoded_url(url))
    assert (unquote(parts.username or ""), unquote(parts.password or "")) == (
        "loader@server",
        "pa/ss",
    )
    assert url_password(url) == "pa/ss"


@pytest.mark.parametrize(
    "text",
    [
        "postgresql://u:hunter2@h:5432/db",
        "postgresql://u:hun@ter2@h/db",
        "jdbc:postgresql://u:hunter2@h/db",
        "host=h user=u password=hunter2 dbname=db",
        "postgresql://u@h/db?sslmode=require&password=hunter2",
        "{'password': 'hun ter2'}",
        '{"password": "hunter2"}',
    ],
)
def test_known_shapes_are_masked(text):
    assert "hunter2" not in mask_credentials(text) and "ter2" not in mask_credentials(text)


@pytest.mark.parametrize(
    "text",
    [
        "sc://spark:15002",
        "s3://bucket/prefix/a.jsonl",
        "duckdb:///tmp/warehouse.duckdb",
        "postgresql://loader@db:5432/analytics",
        'FATAL:  password authentication failed for user "loader"',
    ],
)
def test_text_without_a_password_is_unchanged(text):
    assert mask_credentials(text) == text


def test_known_secrets_come_from_the_settings_in_force():
    env = {
        "MEDALLION_WAREHOUSE_URL": "postgresql://w:wh/pass word@db/x",
        "MEDALLION_CONTROL_URL": "postgresql://c:ctl%23pass@db/y",
        "PGPASSWORD": "libpq-pass",
        "MEDALLION_SPARK_REMOTE": "sc://spark:15002/;user_id=etl;token=spark-token",
        "MEDALLION_HOME": "/not/a/secret",
    }
    secrets = MedallionSettings.from_env(env).secrets
    assert {"wh/pass word", "wh%2Fpass%20word", "ctl#pass", "ctl%23pass", "libpq-pass"} <= secrets
    assert "spark-token" in secrets and "etl" not in secrets
    assert "/not/a/secret" not in secrets
    assert MedallionSettings.from_env({}).secrets == frozenset()


def test_short_known_secrets_are_masked_only_where_structure_shows_them():
    assert mask_credentials("abc in postgresql://u:abc@h/d", {"abc"}) == (
        f"abc in postgresql://u:{MASK}@h/d"
    )


def test_a_secret_cannot_re_form_around_a_mask():
    assert "a***" not in mask_credentials("aa***", {"a***"})


class OpaqueError(Exception):
    """Its message is not built from its args, as with Py4J's errors."""

    def __init__(self, text: str):
        super().__init__()
        self._text_parts = [text]

    def __str__(self) -> str:
        return "".join(self._text_parts)


def _raise_chain(secret: str) -> BaseException:
    try:
        try:
            try:
                raise OpaqueError(f"driver said: {secret}")
            except OpaqueError as inner:
                raise ValueError(f"bad url postgresql://u:{secret}@h/db") from inner
        except ValueError:
            error = RuntimeError(f"step failed; password={secret}")
            error.add_note(f"while connecting with {secret}")
            raise error  # noqa: B904 (the implicit context is what is tested)
    except RuntimeError as raised:
        return raised


def test_an_exception_chain_is_masked_through_and_keeps_its_types():
    secret = "s3/cr#t p@ss"
    masked = masked_exception(_raise_chain(secret), {secret})
    printed = "".join(traceback.format_exception(masked))
    assert secret not in printed and "p@ss" not in printed
    assert isinstance(masked, RuntimeError) and isinstance(masked.__context__, ValueError)
    stand_in = masked.__context__.__cause__
    assert isinstance(stand_in, MaskedError)
    assert str(stand_in) == f"OpaqueError: driver said: {MASK}"
    assert "while connecting with ***" in printed and "bad url postgresql://u:***@h/db" in printed


def test_an_exception_without_secrets_is_untouched():
    error = ValueError("no secret here")
    assert masked_exception(error, {"hunter2"}) is error and error.args == ("no secret here",)


def test_the_masked_stream_masks_what_reaches_it_and_refuses_bytes():
    secret = "t0p/s#cret"
    sink = io.StringIO()
    stream = MaskedStream(sink, {secret})
    traceback.print_exception(_raise_chain(secret), file=stream)
    print(f"using postgresql://u:{secret}@h/db", file=stream)
    assert secret not in sink.getvalue() and "driver said: ***" in sink.getvalue()
    assert f"using postgresql://u:{MASK}@h/db" in sink.getvalue()
    with pytest.raises(TypeError):
        stream.write(secret.encode())  # type: ignore[arg-type]
    assert not hasattr(stream, "buffer")


def test_a_masked_log_file_hides_passwords_in_the_traceback_and_a_json_record_too(tmp_path):
    """PySpark's query-context logger writes the Java trace in the record's exception (a JSON
    formatter's field): the file masks the record as written, not only its message."""
    import logging

    from pyspark.logger.logger import JSONFormatter

    from medallion_assets.credentials import MaskedFileHandler

    handler = MaskedFileHandler(tmp_path / "logs" / "spark.log", ["hunter2-secret"])
    handler.setFormatter(JSONFormatter())
    logger = logging.getLogger("test.masked.file")
    logger.addHandler(handler)
    try:
        raise RuntimeError("jdbc:postgresql://etl:hunter2-secret@db/lake refused")
    except RuntimeError:
        logger.exception("query failed for hunter2-secret")
    finally:
        logger.removeHandler(handler)
        handler.close()
    written = (tmp_path / "logs" / "spark.log").read_text()
    assert "query failed" in written and "refused" in written
    assert "hunter2" not in written
