"""A real S3 API server on localhost for the tests: moto in server mode, in its own process, with
authentication on (a wrong secret is refused as AWS would), and the AWS environment pointing at it."""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from _procs import stop_process

ALLOW_ALL = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3Server:
    def __init__(self, tmp):
        pytest.importorskip("moto.server")
        pytest.importorskip("s3fs")
        self.port = _free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        # three unauthenticated calls make the user and its key; every later request is checked
        env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "3"}
        self.log = open(os.path.join(tmp, "moto.log"), "wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                                     env=env, stdout=self.log, stderr=subprocess.STDOUT)
        try:  # slow to start, or the IAM calls fail: the server must not outlive the fixture that could not use it
            self._wait()
            import boto3
            iam = boto3.client("iam", endpoint_url=self.endpoint, region_name="us-east-1",
                               aws_access_key_id="bootstrap", aws_secret_access_key="bootstrap")
            iam.create_user(UserName="canning")
            iam.put_user_policy(UserName="canning", PolicyName="all", PolicyDocument=ALLOW_ALL)
            key = iam.create_access_key(UserName="canning")["AccessKey"]
        except BaseException:
            self.stop()
            raise
        self.key_id, self.secret = key["AccessKeyId"], key["SecretAccessKey"]
        self.env = {"AWS_ACCESS_KEY_ID": self.key_id, "AWS_SECRET_ACCESS_KEY": self.secret,
                    "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": self.endpoint,
                    "S3_ENDPOINT": self.endpoint,  # TensorBoard's own S3 reader (its event files)
                    "AWS_CONFIG_FILE": os.path.join(tmp, "aws-config"),
                    "AWS_SHARED_CREDENTIALS_FILE": os.path.join(tmp, "aws-credentials")}

    def _wait(self):
        deadline = time.monotonic() + 180
        while True:
            try:
                urllib.request.build_opener(urllib.request.ProxyHandler({})).open(self.endpoint + "/moto-api/", timeout=2)
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("moto server did not start")
                time.sleep(0.2)

    def fs(self):
        import s3fs
        return s3fs.S3FileSystem(key=self.key_id, secret=self.secret, endpoint_url=self.endpoint,
                                 skip_instance_cache=True)

    def stop(self):
        """Terminate, then kill what does not exit; safe to call twice."""
        stop_process(self.proc)
        self.log.close()


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """The server, with this process's environment set to reach it (restored afterwards)."""
    server = S3Server(str(tmp_path_factory.mktemp("s3")))
    saved = {k: os.environ.get(k) for k in server.env}
    os.environ.update(server.env)
    try:
        yield server
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.stop()
