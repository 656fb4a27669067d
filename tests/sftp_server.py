"""An SFTP server on 127.0.0.1 for the tests, written with paramiko's server classes (no
OpenSSH ``sshd`` is needed, nor root): public-key login for one user, the SFTP subsystem
serving a local folder, and the one shell command Composer's ``SFTPObjectStore`` sends
(``mkdir -p DIR``, before each upload).

Paths the client gives are absolute paths inside the served folder (``/runs/x`` is
``ROOT/runs/x``).
"""

from __future__ import annotations

import os
import shlex
import socket
import threading
from pathlib import Path

import paramiko

USER = "stoicheia"


class _Handle(paramiko.SFTPHandle):
    def stat(self):
        try:
            return paramiko.SFTPAttributes.from_stat(
                os.fstat(
                    self.readfile.fileno() if hasattr(self, "readfile") else self.writefile.fileno()
                )
            )
        except OSError as err:
            return paramiko.SFTPServer.convert_errno(err.errno)


class _Files(paramiko.SFTPServerInterface):
    root: Path

    def _real(self, path: str) -> str:
        return str(self.root / os.path.normpath("/" + path).lstrip("/"))

    def _errno(self, err: OSError):
        return paramiko.SFTPServer.convert_errno(err.errno)

    def list_folder(self, path):
        try:
            real = self._real(path)
            out = []
            for name in os.listdir(real):
                attr = paramiko.SFTPAttributes.from_stat(os.stat(os.path.join(real, name)))
                attr.filename = name
                out.append(attr)
            return out
        except OSError as err:
            return self._errno(err)

    def stat(self, path):
        try:
            return paramiko.SFTPAttributes.from_stat(os.stat(self._real(path)))
        except OSError as err:
            return self._errno(err)

    lstat = stat

    def open(self, path, flags, attr):
        real = self._real(path)
        try:
            fd = os.open(real, flags, 0o644)
        except OSError as err:
            return self._errno(err)
        if flags & os.O_WRONLY:
            mode = "ab" if flags & os.O_APPEND else "wb"
        elif flags & os.O_RDWR:
            mode = "a+b" if flags & os.O_APPEND else "r+b"
        else:
            mode = "rb"
        f = os.fdopen(fd, mode)
        handle = _Handle(flags)
        handle.filename = real
        handle.readfile = f
        handle.writefile = f
        return handle

    def remove(self, path):
        try:
            os.remove(self._real(path))
        except OSError as err:
            return self._errno(err)
        return paramiko.SFTP_OK

    def rename(self, oldpath, newpath):
        try:
            os.replace(self._real(oldpath), self._real(newpath))
        except OSError as err:
            return self._errno(err)
        return paramiko.SFTP_OK

    posix_rename = rename

    def mkdir(self, path, attr):
        try:
            os.mkdir(self._real(path))
        except OSError as err:
            return self._errno(err)
        return paramiko.SFTP_OK

    def rmdir(self, path):
        try:
            os.rmdir(self._real(path))
        except OSError as err:
            return self._errno(err)
        return paramiko.SFTP_OK


class _Login(paramiko.ServerInterface):
    def __init__(self, client_key: paramiko.PKey, root: Path) -> None:
        self.client_key = client_key
        self.root = root

    def get_allowed_auths(self, username):
        return "publickey"

    def check_auth_publickey(self, username, key):
        ok = username == USER and key.get_base64() == self.client_key.get_base64()
        return paramiko.AUTH_SUCCESSFUL if ok else paramiko.AUTH_FAILED

    def check_channel_request(self, kind, chanid):
        return (
            paramiko.OPEN_SUCCEEDED
            if kind == "session"
            else paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED
        )

    def check_channel_exec_request(self, channel, command):
        args = shlex.split(command.decode())
        if args[:2] != ["mkdir", "-p"] or len(args) != 3:
            return False
        os.makedirs(self.root / args[2].lstrip("/"), exist_ok=True)
        channel.send_exit_status(0)
        return True


class SFTPServer:
    """Serve ``root`` over SFTP on ``127.0.0.1:port`` (a free port) until :meth:`stop`.

    ``env`` holds what a client needs: the private key file and a known-hosts file that holds
    this server's host key (Composer rejects unknown hosts).
    """

    def __init__(self, root: Path, keys: Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        keys.mkdir(parents=True, exist_ok=True)
        self.host_key = paramiko.RSAKey.generate(2048)
        client_key = paramiko.RSAKey.generate(2048)
        client_key.write_private_key_file(str(keys / "id_rsa"))
        self.client_key = paramiko.RSAKey(filename=str(keys / "id_rsa"))
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        (keys / "known_hosts").write_text(
            f"[127.0.0.1]:{self.port} ssh-rsa {self.host_key.get_base64()}\n"
        )
        self.env = {
            "COMPOSER_SFTP_KEY_FILE": str(keys / "id_rsa"),
            "COMPOSER_SFTP_KNOWN_HOSTS_FILE": str(keys / "known_hosts"),
        }
        self._stop = False
        self._transports: list[paramiko.Transport] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            t = paramiko.Transport(conn)
            t.add_server_key(self.host_key)
            files = type("Files", (_Files,), {"root": self.root})
            t.set_subsystem_handler("sftp", paramiko.SFTPServer, files)
            t.start_server(server=_Login(self.client_key, self.root))
            self._transports.append(t)

    def stop(self) -> None:
        self._stop = True
        self.sock.close()
        for t in self._transports:
            t.close()
        self.thread.join(timeout=5)
