"""An S3-compatible server on 127.0.0.1 for the object-store tests: moto's server mode, run as
a subprocess so that a test can stop it (the store becomes unreachable: connections are
refused) and start it again on the same port.

moto keeps its state in memory: a restarted server has no buckets and no objects, so
:meth:`S3Server.start` creates the test bucket again.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import boto3
from botocore.config import Config

BUCKET = "stoicheia-test"
ACCESS_KEY = "AKIASTOICHEIATEST000"
SECRET = "SENTINEL-stoicheia-secret-9f2c41d7"  # searched for in every file a run writes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3Server:
    """``moto_server`` on ``127.0.0.1:port`` with the bucket :data:`BUCKET`.

    ``env`` holds what a client needs: the endpoint, fake credentials and a region, and
    nothing else; tests pass it to the processes they start (credentials come from the
    environment only).
    """

    def __init__(
        self, log_dir: Path, port: int | None = None, *, check_credentials: bool = False
    ) -> None:
        self.check_credentials = check_credentials
        self.port = port or free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.log_dir = Path(log_dir)
        self.proc: subprocess.Popen | None = None
        self.env = {
            "S3_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET,
            "AWS_DEFAULT_REGION": "us-east-1",
        }
        self.starts: list[float] = []
        self.stops: list[float] = []

    def start(self, bucket: str | None = BUCKET) -> None:
        moto = Path(sys.executable).parent / "moto_server"
        log = open(self.log_dir / f"moto-{self.port}-{len(self.starts)}.log", "w")
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        if self.check_credentials:
            # moto checks signatures and IAM policies after the first 4 requests, which create
            # the user, its access key, its policy and the bucket
            env["INITIAL_NO_AUTH_ACTION_COUNT"] = "4"
        self.proc = subprocess.Popen(
            [str(moto), "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        deadline = time.time() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    break
            except OSError:
                if self.proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError(
                        f"moto_server did not start on port {self.port}: see {log.name}"
                    ) from None
                time.sleep(0.1)
        self.starts.append(time.time())
        if self.check_credentials:
            iam = boto3.client(
                "iam",
                endpoint_url=self.endpoint,
                region_name="us-east-1",
                aws_access_key_id="AKIAANY",
                aws_secret_access_key="any",
            )
            iam.create_user(UserName="stoicheia")
            key = iam.create_access_key(UserName="stoicheia")["AccessKey"]
            iam.put_user_policy(
                UserName="stoicheia",
                PolicyName="all",
                PolicyDocument='{"Version": "2012-10-17", "Statement": '
                '[{"Effect": "Allow", "Action": "*", "Resource": "*"}]}',
            )
            self.env["AWS_ACCESS_KEY_ID"], self.env["AWS_SECRET_ACCESS_KEY"] = (
                key["AccessKeyId"],
                key["SecretAccessKey"],
            )
        if bucket:
            self.client().create_bucket(Bucket=bucket)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        self.stops.append(time.time())

    def client(self):
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=self.env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=self.env["AWS_SECRET_ACCESS_KEY"],
            region_name="us-east-1",
            config=Config(retries={"max_attempts": 1}),
        )

    def keys(self, prefix: str = "", bucket: str = BUCKET) -> dict[str, int]:
        """``{key: size}`` of every object under ``prefix``."""
        out = {}
        for page in (
            self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        ):
            for obj in page.get("Contents", []):
                out[obj["Key"]] = obj["Size"]
        return out

    def get(self, key: str, bucket: str = BUCKET) -> bytes:
        return self.client().get_object(Bucket=bucket, Key=key)["Body"].read()

    def put(self, key: str, data: bytes, bucket: str = BUCKET) -> None:
        self.client().put_object(Bucket=bucket, Key=key, Body=data)

    def upload_folder(self, folder: Path, prefix: str, bucket: str = BUCKET) -> int:
        """Upload every file under ``folder`` to ``prefix/RELATIVE_PATH``; returns the count."""
        n = 0
        for f in sorted(Path(folder).rglob("*")):
            if f.is_file():
                self.client().upload_file(
                    str(f), bucket, f"{prefix.rstrip('/')}/{f.relative_to(folder).as_posix()}"
                )
                n += 1
        return n
