"""A local S3-compatible server for the tests of runs in an object store: moto in server mode (the dev extra's
``moto[server]``), in this process, bound to 127.0.0.1 on a free port, with an IAM user's keys (checked where a test
asks: ``checking_keys``). Where it cannot start the test skips saying why,
except in CI (CI=true), where it fails."""

from __future__ import annotations

import contextlib
import json
import socket

from tests.conftest import require

REGION = "us-east-1"
BUCKET = "tracekit-test"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _fix_complete_multipart(serialize) -> None:
    """moto 5 answers CompleteMultipartUpload with a <CompleteMultipartUploadResponse> root where S3 (and its
    API model) says <CompleteMultipartUploadResult>; the AWS SDK in pyarrow reads the other name as an error
    inside a 200 and fails every upload. The server's answer is put right here (the test's server, not
    tracekit, is what is wrong)."""
    cls = getattr(serialize, "S3Serializer", None)
    if cls is None or getattr(cls, "_tracekit_fixed", False):
        return
    original = cls._serialized_result_to_response

    def fixed(self, resp, *args, **kwargs):
        resp = original(self, resp, *args, **kwargs)
        if self.operation_model.name == "CompleteMultipartUpload":
            body = resp.get("body")
            if isinstance(body, bytes):
                resp["body"] = body.replace(b"CompleteMultipartUploadResponse", b"CompleteMultipartUploadResult")
            elif isinstance(body, str):
                resp["body"] = body.replace("CompleteMultipartUploadResponse", "CompleteMultipartUploadResult")
        return resp

    cls._serialized_result_to_response = fixed
    cls._tracekit_fixed = True


@contextlib.contextmanager
def s3_server():
    """Yields {"endpoint", "key", "secret", "bucket"}: a running server, its bucket made, its keys."""
    why = None
    try:
        import boto3
        from moto import settings
        from moto.core import serialize
        from moto.server import ThreadedMotoServer
    except ImportError as exc:
        why = f"moto in server mode is not installed ({exc}); pip install -e '.[dev]'"
    require(why is None, why or "", "CI installs the dev extra, moto[server] with it")
    _fix_complete_multipart(serialize)
    import logging

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # (a line per request otherwise)
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    try:
        server.start()
    except Exception as exc:  # noqa: BLE001 - whatever keeps it from starting is the skip's reason
        require(False, f"the local S3 server (moto) could not start on 127.0.0.1:{port}: {exc}",
                "CI must be able to start it")
    endpoint = f"http://127.0.0.1:{port}"
    old_auth = settings.INITIAL_NO_AUTH_ACTION_COUNT
    try:
        import urllib.request

        # moto's state is this process's, shared by every server it starts: a fresh one each time
        urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"), timeout=30)
        iam = boto3.client("iam", endpoint_url=endpoint, region_name=REGION, aws_access_key_id="setup",
                           aws_secret_access_key="setup")
        iam.create_user(UserName="tracekit")
        key = iam.create_access_key(UserName="tracekit")["AccessKey"]
        iam.put_user_policy(UserName="tracekit", PolicyName="s3", PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
        boto3.client("s3", endpoint_url=endpoint, region_name=REGION, aws_access_key_id="setup",
                     aws_secret_access_key="setup").create_bucket(Bucket=BUCKET)

        @contextlib.contextmanager
        def checking_keys():
            """Only the user's keys let in, meanwhile. (Not always: moto's signature check disagrees with the
            AWS SDK's on a listing of a prefix, and refuses the right keys there.)"""
            settings.INITIAL_NO_AUTH_ACTION_COUNT = 0
            try:
                yield
            finally:
                settings.INITIAL_NO_AUTH_ACTION_COUNT = old_auth

        yield {"endpoint": endpoint, "key": key["AccessKeyId"], "secret": key["SecretAccessKey"], "bucket": BUCKET,
               "checking_keys": checking_keys}
    finally:
        settings.INITIAL_NO_AUTH_ACTION_COUNT = old_auth
        server.stop()


def aws_env(monkeypatch, server: dict, tmp_path) -> None:
    """The environment the AWS tools read, pointed at ``server``; nothing of the user's ~/.aws read."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", server["endpoint"])
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", server["key"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", server["secret"])
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
