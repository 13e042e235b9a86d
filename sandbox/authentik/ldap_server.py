"""The LDAP face of the Authentik emulator: Debian's slapd serving, on ldaps, the entries the
outpost would publish, which the emulator writes into it (`sandbox.authentik.ldap_publisher`).
Pods reach it as the platform's outpost Service (`auth/authentik-ldap-outpost:636`), nslcd in the
login pods among them.

slapd holds no more than its schema allows, so it differs from the outpost where LDAP itself would
refuse what the outpost sends (docs/sandbox.md lists how). Only the outpost's bind account reads;
the emulator writes as root over a local socket (ldapi, SASL EXTERNAL), which no pod reaches.
"""

from __future__ import annotations

import secrets
import socket
from pathlib import Path
from urllib.parse import quote

from sandbox.pki import Pki
from sandbox.service import Service

SLAPD = "/usr/sbin/slapd"
SCHEMA_DIR = Path("/etc/ldap/schema")
STANDARD_SCHEMAS = ("core", "cosine", "inetorgperson", "nis")
OUTPOST_SCHEMA = Path(__file__).with_name("outpost.schema")
# Who the emulator is on the local socket: root, as slapd's peer credentials name it.
ROOT_DN = "gidNumber=0+uidNumber=0,cn=peercred,cn=external,cn=auth"
CERT_NAME = "ldap-outpost"
# A Unix socket's path has room for 107 bytes; the URL of a longer one could not be used.
_MAX_SOCKET_PATH = 100


class LdapServer:
    def __init__(self, state_dir: Path, pki: Pki, port: int, base_dn: str, bind_dn: str) -> None:
        self.dir = state_dir
        self.pki = pki
        self.port = port
        self.base_dn = base_dn
        self.bind_dn = bind_dn

    @property
    def bind_password_file(self) -> Path:
        return self.dir / "bind-password"

    def bind_password(self) -> str:
        """The outpost's bind account's password, made once and kept in a 0600 file."""
        path = self.bind_password_file
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch(mode=0o600)
            path.write_text(secrets.token_urlsafe(24) + "\n")
        return path.read_text().strip()

    @property
    def socket_path(self) -> Path:
        return self.dir / "ldapi"

    @property
    def local_url(self) -> str:
        """The root's way in, for the emulator."""
        return f"ldapi://{quote(str(self.socket_path), safe='')}/"

    def config_text(self) -> str:
        schemas = [SCHEMA_DIR / f"{name}.schema" for name in STANDARD_SCHEMAS] + [OUTPOST_SCHEMA]
        includes = "\n".join(f"include {path}" for path in schemas)
        return f"""{includes}
modulepath /usr/lib/ldap
moduleload back_mdb
pidfile {self.dir / "slapd.pid"}
argsfile {self.dir / "slapd.args"}
TLSCACertificateFile {self.pki.ca_cert}
TLSCertificateFile {self.pki.cert(CERT_NAME)}
TLSCertificateKeyFile {self.pki.key(CERT_NAME)}
TLSProtocolMin 3.3
disallow bind_anon

database mdb
maxsize 67108864
suffix "{self.base_dn}"
rootdn "{ROOT_DN}"
directory {self.dir / "data"}
index objectClass eq
index cn,uid,uidNumber,gidNumber,member,memberUid eq
# Anyone may try a password; only the outpost's bind account reads the directory.
access to attrs=userPassword
  by anonymous auth
  by * none
access to *
  by dn.exact="{self.bind_dn}" read
  by * none
"""

    def _prepare(self, server_names: list[str]) -> None:
        if not Path(SLAPD).exists():
            raise FileNotFoundError(
                f"{SLAPD} is missing: run `make setup`, which installs Debian's slapd "
                "(sandbox/install.sh)"
            )
        if len(str(self.socket_path)) > _MAX_SOCKET_PATH:
            raise ValueError(
                f"the LDAP server's socket path {self.socket_path} is longer than a Unix socket "
                "allows: put the sandbox's state in a shorter directory (XDG_STATE_HOME)"
            )
        (self.dir / "data").mkdir(parents=True, exist_ok=True, mode=0o700)
        self.pki.ensure()
        self.pki.issue_server(CERT_NAME, ["localhost", *server_names])
        (self.dir / "slapd.conf").write_text(self.config_text())
        self.bind_password()

    def _ready(self) -> bool:
        if not self.socket_path.exists():
            return False
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2):
                return True
        except OSError:
            return False

    def service(self, server_names: list[str]) -> Service:
        """slapd in the foreground (`-d 0` logs nothing but what stops it), listening on ldaps
        at `port` for the names `server_names` (its certificate's) and on its local socket."""
        listen = f"ldaps://127.0.0.1:{self.port}/ {self.local_url}"
        return Service(
            name="ldap-outpost",
            argv=[SLAPD, "-d", "0", "-f", str(self.dir / "slapd.conf"), "-h", listen],
            ports=(self.port,),
            prepare=lambda: self._prepare(server_names),
            ready=self._ready,
            revision=lambda: self.config_text() + OUTPOST_SCHEMA.read_text(),
        )
