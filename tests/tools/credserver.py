#!/usr/bin/env python3
"""credserver.py - the credential endpoints a training node talks to, and a
data gateway that only lets their credentials through, for tierfs tests.

One HTTP/1.1 server on loopback plays every role, each on its own paths and
each checking what the real one checks:

  POST /token                        OAuth 2 token endpoint (token_uri of the
                                     keys it writes): a jwt-bearer assertion
                                     must carry a valid RS256 signature made
                                     with the service account's key and the
                                     right iss, aud, scope, iat and exp; a
                                     refresh_token grant must name the
                                     authorized user's client and token.
  GET  /computeMetadata/v1/...token  GCE metadata server: needs
                                     "Metadata-Flavor: Google".
  PUT  /latest/api/token             IMDSv2 session token (needs its TTL
                                     header); the credentials paths under
                                     /latest/meta-data/iam/ need the token.
  GET  /ecs/creds                    container credentials: needs the
                                     Authorization token.
  POST /  Action=AssumeRoleWithWebIdentity
                                     STS: needs the role ARN and the web
                                     identity token it wrote.
  GET  /BUCKET--x-s3?session         S3 Express One Zone CreateSession (a
                                     directory bucket: its name ends in
                                     "--x-s3"; path-style): SigV4 with
                                     temporary keys it issued and their
                                     x-amz-security-token, checked as the
                                     data gateway checks them, but for the
                                     service "s3express" and with every
                                     x-amz-* header signed;
                                     x-amz-create-session-mode ReadWrite
                                     (the default) or ReadOnly.  It answers
                                     session keys and a session token bound
                                     to that bucket and mode, which live
                                     --session-ttl seconds.
  GET, HEAD, PUT, DELETE /BUCKET--x-s3[/KEY]
                                     directory bucket data: SigV4 for
                                     "s3express" with a session's keys and
                                     its x-amz-s3session-token (signed), for
                                     that bucket, not expired; never the IAM
                                     keys.  A ReadOnly session may not PUT
                                     or DELETE; every x-amz-* header must be
                                     signed; x-amz-content-sha256 is
                                     UNSIGNED-PAYLOAD or the body's SHA-256.
                                     The request is then signed again with
                                     the real keys (its x-amz-meta-* signed
                                     too) and sent to --upstream, with its
                                     body (<= 64 MiB), Range, If-Match,
                                     If-None-Match, Content-Type and
                                     x-amz-meta-*; the reply, errors
                                     included, comes back with its status,
                                     body, ETag, Last-Modified,
                                     Content-Range, Accept-Ranges,
                                     Content-Type and x-amz-meta-*.
  everything else (GET, HEAD)        data: "Authorization: Bearer T" with a
                                     token it issued and that has not
                                     expired (GCS), or SigV4 signed with
                                     temporary keys it issued, with their
                                     session token, not expired (S3); never
                                     with an x-amz-s3session-token.  The
                                     request is then signed again with the
                                     real keys and sent to --upstream
                                     (radosgw).  For bearer requests it
                                     speaks GCS: x-goog-generation on
                                     replies, <Generation> in listings,
                                     x-goog-if-generation-match honoured.
  GET  /__cred/stats                 counters, one "name value" a line
                                     ("issued_early": credentials issued while
                                     the last ones were still valid, i.e.
                                     refreshed ahead; "sessions_early": the
                                     same for a bucket's sessions);
                                     /__cred/fail?n=N makes the next N
                                     credential requests (CreateSession
                                     included) fail with HTTP 500 (a refresh
                                     that fails); /__cred/session_ttl?s=N
                                     sets the lifetime of the sessions
                                     issued from then on;
                                     /__cred/revoke_sessions forgets every
                                     session issued (the next request
                                     signed with one is refused).

Everything it hands out lives --ttl seconds, but sessions --session-ttl
(default 300, as in AWS).  At start it writes, in
--dir: sa.json (a service-account key: a fresh RSA key, token_uri pointing
here), user.json (an authorized_user file), web-token (a web identity
token) and container-token, then the port to --port-file.  Every secret
it makes contains CANARY_MARK, so tests can grep for leaks.

Written in Python (standard library plus python3-cryptography) rather than
C: the checks must be an implementation independent of the code under
test (its SigV4 and JWT code), and here they are a few lines each.
"""

import argparse
import base64
import datetime
import hashlib
import hmac
import http.client
import http.server
import json
import os
import re
import secrets
import sys
import threading
import time
import urllib.parse

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

CANARY_MARK = "TFSCANARY"
GCS_SCOPES = ("https://www.googleapis.com/auth/devstorage.read_only",
              "https://www.googleapis.com/auth/devstorage.full_control",
              "https://www.googleapis.com/auth/cloud-platform")
ROLE_ARN = "arn:aws:iam::123456789012:role/tierfs-test"
IMDS_ROLE = "tierfs-test-role"
MAX_BODY = 1 << 20           # a credential endpoint's request body
MAX_OBJECT = 64 << 20        # an object PUT to a directory bucket
EXPRESS_SUFFIX = "--x-s3"    # how a directory bucket's name ends
SIGV4_AUTH = re.compile(r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request,"
                        r"\s*SignedHeaders=([a-z0-9;-]+),\s*Signature=([0-9a-f]{64})")


def secret(n=24):
    return CANARY_MARK + secrets.token_hex(n)


def b64url_decode(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def iso(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def sha256_hex(b):
    return hashlib.sha256(b).hexdigest()


def same(a, b):
    """Constant-time equality of two header values (any characters)."""
    return hmac.compare_digest(a.encode("utf-8", "surrogatepass"),
                               b.encode("utf-8", "surrogatepass"))


def uri_encode(s, safe="-_.~"):
    return urllib.parse.quote(s, safe=safe)


def canonical_query(query):
    pairs = []
    for part in query.split("&") if query else []:
        if not part:
            continue
        k, _, v = part.partition("=")
        pairs.append((uri_encode(urllib.parse.unquote(k)), uri_encode(urllib.parse.unquote(v))))
    pairs.sort()
    return "&".join(f"{k}={v}" for k, v in pairs)


def sigv4_key(secret_key, date, region, service):
    k = hmac.new(("AWS4" + secret_key).encode(), date.encode(), hashlib.sha256).digest()
    k = hmac.new(k, region.encode(), hashlib.sha256).digest()
    k = hmac.new(k, service.encode(), hashlib.sha256).digest()
    return hmac.new(k, b"aws4_request", hashlib.sha256).digest()


def sigv4_signature(secret_key, method, path, query, headers, signed, payload_hash, amz_date,
                    scope):
    """headers: dict of lower-case name -> value."""
    canon_headers = "".join(f"{h}:{' '.join(headers.get(h, '').split())}\n" for h in signed)
    creq = "\n".join([method, path, canonical_query(query), canon_headers, ";".join(signed),
                      payload_hash])
    sts = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, sha256_hex(creq.encode())])
    date, region, service, _ = scope.split("/")
    return hmac.new(sigv4_key(secret_key, date, region, service), sts.encode(),
                    hashlib.sha256).hexdigest()


class State:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.tokens = {}          # bearer token -> expiry
        self.keys = {}            # access key -> (secret, session token, expiry)
        self.imds_tokens = {}     # IMDS session token -> expiry
        self.sessions = {}        # session access key -> (secret, token, bucket, mode, expiry)
        self.session_exp = {}     # directory bucket -> expiry of its session issued last
        self.session_ttl = args.session_ttl
        self.fail_next = 0
        self.last_exp = 0.0       # expiry of the credentials issued last
        self.stats = {k: 0 for k in (
            "oauth_jwt", "oauth_refresh", "metadata", "imds", "container", "sts",
            "issued", "issued_early", "refused_creds", "failed_on_purpose", "data_ok", "data_rejected",
            "data_expired", "gcs_generation_checks", "stale", "sessions", "sessions_early",
            "sessions_read_only",
            "express_ok", "express_rejected", "express_expired")}

    def count(self, name, n=1):
        with self.lock:
            self.stats[name] = self.stats.get(name, 0) + n

    def should_fail(self):
        with self.lock:
            if self.fail_next > 0:
                self.fail_next -= 1
                self.stats["failed_on_purpose"] += 1
                return True
            return False

    def purge(self, now):
        for d in (self.tokens, self.imds_tokens):
            for k in [k for k, e in d.items() if e < now - 600]:
                del d[k]
        for k in [k for k, v in self.keys.items() if v[2] < now - 600]:
            del self.keys[k]
        for k in [k for k, v in self.sessions.items() if v[4] < now - 600]:
            del self.sessions[k]

    def issue(self, now):
        """Count one issue; "early" when the last ones had not expired yet:
        a refresh ahead of expiry, not a recovery after it."""
        self.purge(now)
        self.stats["issued"] += 1
        if self.last_exp > now:
            self.stats["issued_early"] += 1
        self.last_exp = now + self.args.ttl

    def new_bearer(self):
        tok = "ya29." + secret()
        now = time.time()
        with self.lock:
            self.issue(now)
            self.tokens[tok] = now + self.args.ttl
        return tok

    def new_keys(self):
        ak = "ASIA" + secrets.token_hex(8).upper()
        sk, st = secret(20), secret(40)
        now = time.time()
        exp = now + self.args.ttl
        with self.lock:
            self.issue(now)
            self.keys[ak] = (sk, st, exp)
        return ak, sk, st, exp

    def new_session(self, bucket, mode):
        """An S3 Express session for one bucket and mode.  Counted apart from
        issue(): "issued" stays the node's IAM credentials."""
        ak = "ASIA" + secrets.token_hex(8).upper()
        sk, tok = secret(20), secret(40)
        now = time.time()
        with self.lock:
            self.purge(now)
            exp = now + self.session_ttl
            self.stats["sessions"] += 1
            self.stats["sessions_read_only"] += mode == "ReadOnly"
            if self.session_exp.get(bucket, 0.0) > now:
                self.stats["sessions_early"] += 1
            self.session_exp[bucket] = exp
            self.sessions[ak] = (sk, tok, bucket, mode, exp)
        return ak, sk, tok, exp


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "credserver"

    def log_message(self, fmt, *a):     # no request log: it would hold paths only, but
        pass                            # keep stderr for errors

    # ---- plumbing ----
    def reply(self, code, body=b"", ctype="application/json", headers=None):
        if isinstance(body, str):
            body = body.encode()
        self.send_response(code)
        if ctype and body:
            self.send_header("Content-Type", ctype)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def read_body(self):
        n = int(self.headers.get("Content-Length", "0") or 0)
        if n > MAX_BODY:
            raise ValueError("body too large")
        return self.rfile.read(n) if n else b""

    def xml_error(self, code, err, msg):
        self.reply(code, f"<?xml version='1.0' encoding='UTF-8'?><Error><Code>{err}</Code>"
                         f"<Message>{msg}</Message></Error>", "application/xml")

    @property
    def st(self):
        return self.server.state

    # ---- dispatch ----
    def do_GET(self):
        self.dispatch()

    def do_HEAD(self):
        self.dispatch()

    def do_PUT(self):
        self.dispatch()

    def do_POST(self):
        self.dispatch()

    def do_DELETE(self):
        self.dispatch()

    def dispatch(self):
        try:
            u = urllib.parse.urlsplit(self.path)
            path, query = u.path, u.query
            if path.startswith("/__cred/"):
                return self.control(path, query)
            if self.command == "POST" and path == "/token":
                return self.oauth_token()
            if self.command == "POST" and path == "/":
                return self.sts()
            if path.startswith("/computeMetadata/"):
                return self.gce_metadata(path)
            if path.startswith("/latest/"):
                return self.imds(path)
            if path == "/ecs/creds":
                return self.container()
            bucket, _, key = path[1:].partition("/")
            if bucket.endswith(EXPRESS_SUFFIX):
                return self.express(bucket, key, path, query)
            if "x-amz-s3session-token" in self.headers:
                return self.session_elsewhere()
            if self.command in ("GET", "HEAD"):
                return self.data(path, query)
            self.reply(405, '{"error":"method"}')
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception as e:          # a test server: say what broke, keep serving
            print(f"credserver: {type(e).__name__}: {e}", file=sys.stderr)
            try:
                self.reply(500, '{"error":"internal"}')
            except Exception:
                pass

    def control(self, path, query):
        q = urllib.parse.parse_qs(query)
        if path == "/__cred/stats":
            with self.st.lock:
                return self.reply(200, "".join(f"{k} {v}\n" for k, v in self.st.stats.items()),
                                  "text/plain")
        if path == "/__cred/fail":
            with self.st.lock:
                self.st.fail_next = int(q.get("n", ["1"])[0])
            return self.reply(200, "{}")
        if path == "/__cred/revoke_sessions":
            with self.st.lock:
                self.st.sessions.clear()
            return self.reply(200, "{}")
        if path == "/__cred/session_ttl":
            s = q.get("s", [""])[0]
            if not s.isdigit():
                return self.reply(400, '{"error":"s must be seconds"}')
            with self.st.lock:
                self.st.session_ttl = int(s)
            return self.reply(200, "{}")
        self.reply(404, "{}")

    # ---- OAuth 2 token endpoint ----
    def oauth_token(self):
        form = urllib.parse.parse_qs(self.read_body().decode(), keep_blank_values=True)
        grant = form.get("grant_type", [""])[0]
        if self.st.should_fail():
            return self.reply(500, '{"error":"internal_failure"}')
        if grant == "urn:ietf:params:oauth:grant-type:jwt-bearer":
            self.st.count("oauth_jwt")
            why = self.check_assertion(form.get("assertion", [""])[0])
        elif grant == "refresh_token":
            self.st.count("oauth_refresh")
            au = self.server.user
            ok = (form.get("client_id", [""])[0] == au["client_id"] and
                  hmac.compare_digest(form.get("client_secret", [""])[0], au["client_secret"]) and
                  hmac.compare_digest(form.get("refresh_token", [""])[0], au["refresh_token"]))
            why = None if ok else "bad client or refresh token"
        else:
            return self.reply(400, '{"error":"unsupported_grant_type"}')
        if why:
            self.st.count("refused_creds")
            return self.reply(400, json.dumps({"error": "invalid_grant",
                                               "error_description": why}))
        tok = self.st.new_bearer()
        self.reply(200, json.dumps({"access_token": tok, "expires_in": self.st.args.ttl,
                                    "token_type": "Bearer"}))

    def check_assertion(self, jwt):
        parts = jwt.split(".")
        if len(parts) != 3:
            return "not a JWT"
        try:
            header = json.loads(b64url_decode(parts[0]))
            claims = json.loads(b64url_decode(parts[1]))
            sig = b64url_decode(parts[2])
        except Exception:
            return "malformed JWT"
        if header.get("alg") != "RS256" or header.get("typ", "JWT") != "JWT":
            return "alg must be RS256"
        if header.get("kid") != self.server.sa["private_key_id"]:
            return "unknown kid"
        try:
            self.server.public_key.verify(sig, (parts[0] + "." + parts[1]).encode(),
                                          padding.PKCS1v15(), hashes.SHA256())
        except Exception:
            return "bad signature"
        now = time.time()
        if claims.get("iss") != self.server.sa["client_email"]:
            return "bad iss"
        if claims.get("aud") != self.server.sa["token_uri"]:
            return "bad aud"
        if not any(s in GCS_SCOPES for s in str(claims.get("scope", "")).split()):
            return "no storage scope"
        iat, exp = claims.get("iat"), claims.get("exp")
        if not isinstance(iat, int) or not isinstance(exp, int):
            return "iat and exp must be integers"
        if iat > now + 60 or exp <= now or exp - iat > 3600:
            return "bad iat/exp"
        return None

    # ---- GCE metadata ----
    def gce_metadata(self, path):
        if self.headers.get("Metadata-Flavor") != "Google" or self.headers.get("X-Forwarded-For"):
            self.st.count("refused_creds")
            return self.reply(403, "Missing Metadata-Flavor:Google header.", "text/html")
        if path != "/computeMetadata/v1/instance/service-accounts/default/token":
            return self.reply(404, "not found", "text/html")
        self.st.count("metadata")
        if self.st.should_fail():
            return self.reply(500, "internal error", "text/html")
        tok = self.st.new_bearer()
        self.reply(200, json.dumps({"access_token": tok, "expires_in": self.st.args.ttl,
                                    "token_type": "Bearer"}),
                   headers={"Metadata-Flavor": "Google"})

    # ---- EC2 IMDSv2 ----
    def imds(self, path):
        now = time.time()
        if path == "/latest/api/token":
            if self.command != "PUT":
                return self.reply(405, "", "text/plain")
            ttl = self.headers.get("X-aws-ec2-metadata-token-ttl-seconds", "")
            if not ttl.isdigit() or not 1 <= int(ttl) <= 21600:
                return self.reply(400, "", "text/plain")
            tok = secret(16)
            with self.st.lock:
                self.st.imds_tokens[tok] = now + int(ttl)
            return self.reply(200, tok, "text/plain")
        tok = self.headers.get("X-aws-ec2-metadata-token", "")
        with self.st.lock:
            valid = self.st.imds_tokens.get(tok, 0) > now
        if not valid:                   # IMDSv2 only: v1 requests are refused
            self.st.count("refused_creds")
            return self.reply(401, "", "text/plain")
        base = "/latest/meta-data/iam/security-credentials/"
        if path == base:
            return self.reply(200, IMDS_ROLE, "text/plain")
        if path != base + IMDS_ROLE:
            return self.reply(404, "", "text/plain")
        self.st.count("imds")
        if self.st.should_fail():
            return self.reply(500, "", "text/plain")
        ak, sk, st, exp = self.st.new_keys()
        self.reply(200, json.dumps({"Code": "Success", "LastUpdated": iso(now),
                                    "Type": "AWS-HMAC", "AccessKeyId": ak,
                                    "SecretAccessKey": sk, "Token": st,
                                    "Expiration": iso(exp)}))

    # ---- container credentials ----
    def container(self):
        if not hmac.compare_digest(self.headers.get("Authorization", ""),
                                   self.server.container_token):
            self.st.count("refused_creds")
            return self.reply(401, '{"message":"bad authorization token"}')
        self.st.count("container")
        if self.st.should_fail():
            return self.reply(500, '{"message":"internal"}')
        ak, sk, st, exp = self.st.new_keys()
        self.reply(200, json.dumps({"AccessKeyId": ak, "SecretAccessKey": sk, "Token": st,
                                    "Expiration": iso(exp), "RoleArn": ROLE_ARN}))

    # ---- STS AssumeRoleWithWebIdentity ----
    def sts(self):
        form = urllib.parse.parse_qs(self.read_body().decode(), keep_blank_values=True)
        get = lambda k: form.get(k, [""])[0]
        if get("Action") != "AssumeRoleWithWebIdentity" or get("Version") != "2011-06-15":
            return self.sts_error(400, "InvalidAction", "unsupported action")
        self.st.count("sts")
        if get("RoleArn") != ROLE_ARN:
            return self.sts_error(403, "AccessDenied", "not authorized to assume this role")
        if not hmac.compare_digest(get("WebIdentityToken"), self.server.web_token) \
                or not get("RoleSessionName"):
            self.st.count("refused_creds")
            return self.sts_error(400, "InvalidIdentityToken", "the token is not valid")
        if self.st.should_fail():
            return self.sts_error(500, "InternalFailure", "try again")
        ak, sk, st, exp = self.st.new_keys()
        body = ("<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/"
                "2011-06-15/\"><AssumeRoleWithWebIdentityResult><Credentials>"
                f"<AccessKeyId>{ak}</AccessKeyId><SecretAccessKey>{sk}</SecretAccessKey>"
                f"<SessionToken>{st}</SessionToken><Expiration>{iso(exp)}</Expiration>"
                "</Credentials><AssumedRoleUser><Arn>" + ROLE_ARN + "</Arn></AssumedRoleUser>"
                "</AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>")
        self.reply(200, body, "text/xml")

    def sts_error(self, code, err, msg):
        self.reply(code, f"<ErrorResponse><Error><Type>Sender</Type><Code>{err}</Code>"
                         f"<Message>{msg}</Message></Error></ErrorResponse>", "text/xml")

    # ---- data gateway ----
    def data(self, path, query):
        auth = self.headers.get("Authorization", "")
        now = time.time()
        if auth.startswith("Bearer "):
            with self.st.lock:
                exp = self.st.tokens.get(auth[7:])
            if exp is None:
                self.st.count("data_rejected")
                return self.xml_error(401, "AuthenticationRequired", "Invalid Credentials")
            if exp <= now:
                self.st.count("data_expired")
                return self.xml_error(401, "AuthenticationRequired", "Token expired")
            return self.forward(path, query, gcs=True)
        why = self.check_sigv4(path, query, auth, now)
        if why:
            code, err = why
            self.st.count("data_expired" if err == "ExpiredToken" else "data_rejected")
            return self.xml_error(code, err, "refused by credserver")
        return self.forward(path, query, gcs=False)

    def check_sigv4(self, path, query, auth, now):
        m = SIGV4_AUTH.fullmatch(auth)
        if not m:
            return (403, "AccessDenied")
        ak, date, region, service, signed, sig = m.groups()
        with self.st.lock:
            k = self.st.keys.get(ak)
        if k is None:
            return (403, "InvalidAccessKeyId")
        sk, st, exp = k
        if exp <= now:
            return (400, "ExpiredToken")
        if not hmac.compare_digest(self.headers.get("x-amz-security-token", ""), st):
            return (403, "InvalidToken")
        signed = signed.split(";")
        if "host" not in signed or "x-amz-date" not in signed or \
                ("x-amz-security-token" not in signed):
            return (403, "AccessDenied")
        if not self.signature_ok(sk, m, path, query):
            return (403, "SignatureDoesNotMatch")
        return None

    def signature_ok(self, sk, m, path, query):
        """The SigV4 Authorization matched in m is this request's, signed with
        secret sk, for the date of its x-amz-date."""
        _, date, region, service, signed, sig = m.groups()
        hdrs = {h.lower(): v for h, v in self.headers.items()}
        amz_date = hdrs.get("x-amz-date", "")
        if not amz_date.startswith(date):
            return False
        want = sigv4_signature(sk, self.command, path, query, hdrs, signed.split(";"),
                               hdrs.get("x-amz-content-sha256", ""), amz_date,
                               f"{date}/{region}/{service}/aws4_request")
        return hmac.compare_digest(want, sig)

    def upstream(self, method, path, query, extra, body=b"", signed_extra=None):
        """method path?query to --upstream, signed with the real keys.  extra:
        headers sent unsigned; signed_extra: lower-case headers signed too."""
        a = self.st.args
        u = urllib.parse.urlsplit(a.upstream)
        host = u.netloc
        amz_date = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        payload = sha256_hex(body)
        hdrs = {"host": host, "x-amz-date": amz_date, "x-amz-content-sha256": payload}
        hdrs.update(signed_extra or {})
        signed = sorted(hdrs)
        scope = f"{amz_date[:8]}/{a.region}/s3/aws4_request"
        sig = sigv4_signature(a.upstream_secret, method, path, query, hdrs, signed, payload,
                              amz_date, scope)
        hdrs["Authorization"] = (f"AWS4-HMAC-SHA256 Credential={a.upstream_key}/{scope}, "
                                 f"SignedHeaders={';'.join(signed)}, Signature={sig}")
        hdrs.update(extra)
        conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=60)
        try:
            conn.request(method, path + ("?" + query if query else ""), body=body or None,
                         headers=hdrs)
            r = conn.getresponse()
            body = r.read() if method != "HEAD" else b""
            return r.status, dict((k.lower(), v) for k, v in r.getheaders()), body
        finally:
            conn.close()

    @staticmethod
    def generation(etag):
        """A stable GCS-like generation for an object version (from its ETag)."""
        return str(int(hashlib.sha256(etag.encode()).hexdigest()[:13], 16) + 1)

    def forward(self, path, query, gcs):
        extra = {}
        for h in ("Range", "If-Match"):
            if self.headers.get(h):
                extra[h] = self.headers[h]
        want_gen = self.headers.get("x-goog-if-generation-match") if gcs else None
        if want_gen is not None:
            self.st.count("gcs_generation_checks")
            s, h, _ = self.upstream("HEAD", path, query, {})
            if s != 200 or self.generation(h.get("etag", "")) != want_gen:
                self.st.count("stale")
                return self.xml_error(412, "PreconditionFailed",
                                      "At least one of the pre-conditions you specified did "
                                      "not hold.")
            extra["If-Match"] = h.get("etag", "")
        status, h, body = self.upstream(self.command, path, query, extra)
        out = {}
        for k in ("etag", "last-modified", "content-range", "accept-ranges"):
            if k in h:
                out[k] = h[k]
        if gcs and "etag" in h and status in (200, 206):
            out["x-goog-generation"] = self.generation(h["etag"])
            out["x-goog-metageneration"] = "1"
        if gcs and status == 200 and b"<ListBucketResult" in body[:512]:
            body = re.sub(rb"<ETag>([^<]*)</ETag>",
                          lambda m: m.group(0) + b"<Generation>" + self.generation(
                              m.group(1).decode().replace("&quot;", '"')).encode()
                          + b"</Generation>", body)
        self.st.count("data_ok")
        if self.command == "HEAD":
            self.send_response(status)
            for k, v in out.items():
                self.send_header(k, v)
            self.send_header("Content-Length", h.get("content-length", "0"))
            self.end_headers()
            return
        self.reply(status, body, h.get("content-type", "application/octet-stream"), out)

    # ---- S3 Express One Zone: directory buckets ----
    def express(self, bucket, key, path, query):
        """A request to a directory bucket: CreateSession, or data signed with
        a session CreateSession handed out."""
        if self.command not in ("GET", "HEAD", "PUT", "DELETE"):
            self.close_connection = True        # its body, if any, stays unread
            return self.express_refuse(405, "MethodNotAllowed",
                                       "The specified method is not allowed against this "
                                       "resource.")
        body = self.object_body()
        if body is None:
            return
        now = time.time()
        if not key and query in ("session", "session="):
            return self.create_session(bucket, path, query, body, now)
        why = self.check_session(bucket, path, query, body, now)
        if why:
            return self.express_refuse(*why)
        self.express_forward(path, query, body)

    def express_refuse(self, code, err, msg):
        self.st.count("express_expired" if err == "ExpiredToken" else "express_rejected")
        self.xml_error(code, err, msg)

    def object_body(self):
        """The whole body, read with its Content-Length (<= MAX_OBJECT); None
        once refused."""
        cl = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding") or (cl is None and self.command == "PUT"):
            self.close_connection = True
            self.express_refuse(411, "MissingContentLength",
                                "You must provide the Content-Length HTTP header.")
            return None
        if cl is None:
            return b""
        if not cl.strip().isdigit():
            self.close_connection = True
            self.express_refuse(400, "InvalidArgument", "Content-Length must be a number.")
            return None
        n = int(cl)
        if n > MAX_OBJECT:
            self.close_connection = True
            self.express_refuse(400, "EntityTooLarge",
                                "Your proposed upload exceeds the maximum allowed size "
                                f"(here {MAX_OBJECT} bytes).")
            return None
        body = self.rfile.read(n) if n else b""
        if len(body) != n:
            self.close_connection = True
            self.express_refuse(400, "IncompleteBody",
                                "You did not provide the number of bytes specified by the "
                                "Content-Length HTTP header.")
            return None
        return body

    def create_session(self, bucket, path, query, body, now):
        """CreateSession: the node's IAM credentials, for the service s3express."""
        if self.command != "GET":
            return self.express_refuse(405, "MethodNotAllowed",
                                       "CreateSession is GET /BUCKET?session.")
        auth = self.headers.get("Authorization", "")
        why = self.check_sigv4(path, query, auth, now)
        if why:
            return self.express_refuse(*why, "CreateSession takes the node's IAM credentials: "
                                             "SigV4 with temporary keys and their "
                                             "x-amz-security-token, signed.")
        _, _, _, service, signed, _ = SIGV4_AUTH.fullmatch(auth).groups()
        why = (self.headers_not_signed(signed.split(";"), ()) or self.not_s3express(service)
               or self.payload_format() or self.payload_mismatch(body))
        if why:
            return self.express_refuse(*why)
        mode = self.headers.get("x-amz-create-session-mode", "ReadWrite")
        if mode not in ("ReadWrite", "ReadOnly"):
            return self.express_refuse(400, "InvalidArgument",
                                       "x-amz-create-session-mode must be ReadWrite or "
                                       "ReadOnly.")
        if self.st.should_fail():
            return self.xml_error(500, "InternalError",
                                  "We encountered an internal error. Please try again.")
        ak, sk, tok, exp = self.st.new_session(bucket, mode)
        self.reply(200, '<?xml version="1.0" encoding="UTF-8"?>'
                        '<CreateSessionResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
                        f"<Credentials><SessionToken>{tok}</SessionToken>"
                        f"<SecretAccessKey>{sk}</SecretAccessKey>"
                        f"<AccessKeyId>{ak}</AccessKeyId>"
                        f"<Expiration>{iso(exp)}</Expiration></Credentials>"
                        "</CreateSessionResult>", "application/xml")

    def check_session(self, bucket, path, query, body, now):
        """None, or (status, code, message) refusing a directory bucket data
        request: the checks in S3 Express's order."""
        m = SIGV4_AUTH.fullmatch(self.headers.get("Authorization", ""))
        if not m:
            return (403, "AccessDenied", "A directory bucket takes SigV4 with session "
                                         "credentials.")
        ak, _, _, service, signed, _ = m.groups()
        with self.st.lock:
            iam = ak in self.st.keys
            sess = self.st.sessions.get(ak)
        if iam or "x-amz-security-token" in self.headers:
            return (403, "AccessDenied", "Only CreateSession takes IAM credentials; sign with "
                                         "a session's.")
        if sess is None:
            return (403, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not "
                                               "exist in our records.")
        sk, tok, sess_bucket, mode, exp = sess
        if not same(self.headers.get("x-amz-s3session-token", ""), tok):
            return (403, "InvalidToken", "The provided token is malformed or otherwise invalid "
                                         "(x-amz-s3session-token).")
        if sess_bucket != bucket:
            return (403, "AccessDenied", "The session is for another bucket.")
        if exp <= now:
            return (400, "ExpiredToken", "The provided token has expired.")
        why = (self.headers_not_signed(signed.split(";"),
                                       ("host", "x-amz-date", "x-amz-s3session-token"))
               or self.payload_format())
        if why:
            return why
        if self.not_s3express(service) or not self.signature_ok(sk, m, path, query):
            return (403, "SignatureDoesNotMatch", "The request signature we calculated does not "
                                                  "match the signature you provided.")
        if mode == "ReadOnly" and self.command in ("PUT", "DELETE"):
            return (403, "AccessDenied", "A ReadOnly session may not PUT or DELETE.")
        return self.payload_mismatch(body)

    def headers_not_signed(self, signed, required):
        """S3 wants the required headers and every x-amz-* one it gets signed."""
        sent = {h.lower() for h in self.headers.keys()}
        missing = [h for h in required if h not in signed]
        missing += sorted(h for h in sent if h.startswith("x-amz-") and h not in signed)
        if missing:
            return (403, "AccessDenied", "There were headers present in the request which were "
                                         f"not signed: {', '.join(missing)}")
        return None

    @staticmethod
    def not_s3express(service):
        if service != "s3express":
            return (403, "SignatureDoesNotMatch", "The credential scope's service is "
                                                  f"{service!r}, not 's3express'.")
        return None

    def payload_format(self):
        v = self.headers.get("x-amz-content-sha256")
        if v is None:
            return (400, "InvalidRequest", "Missing required header for this request: "
                                           "x-amz-content-sha256")
        if v != "UNSIGNED-PAYLOAD" and not re.fullmatch(r"[0-9a-fA-F]{64}", v):
            return (400, "InvalidArgument", "x-amz-content-sha256 must be UNSIGNED-PAYLOAD or "
                                            "a valid sha256 value.")
        return None

    def payload_mismatch(self, body):
        v = self.headers.get("x-amz-content-sha256", "")
        if v != "UNSIGNED-PAYLOAD" and v.lower() != sha256_hex(body):
            return (400, "XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' "
                                                      "header does not match what was computed.")
        return None

    def express_forward(self, path, query, body):
        """An accepted directory bucket request to --upstream (the bucket there
        has the same name), and its reply, errors included, back."""
        extra = {}
        for h in ("Range", "If-Match", "If-None-Match", "Content-Type"):
            if self.headers.get(h):
                extra[h] = self.headers[h]
        meta = {h.lower(): v for h, v in self.headers.items()
                if h.lower().startswith("x-amz-meta-")}
        status, h, rbody = self.upstream(self.command, path, query, extra, body, meta)
        out = {k: h[k] for k in ("etag", "last-modified", "content-range", "accept-ranges",
                                 "content-type") if k in h}
        out.update((k, v) for k, v in h.items() if k.startswith("x-amz-meta-"))
        self.st.count("express_ok")
        self.send_response(status)
        for k, v in out.items():
            self.send_header(k, v)
        self.send_header("Content-Length", h.get("content-length", "0") if self.command == "HEAD"
                         else str(len(rbody)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(rbody)

    def session_elsewhere(self):
        """x-amz-s3session-token sent to a general purpose bucket."""
        if self.headers.get("Content-Length", "0").strip() not in ("", "0") \
                or self.headers.get("Transfer-Encoding"):
            self.close_connection = True        # its body stays unread
        self.st.count("data_rejected")
        self.xml_error(403, "AccessDenied", "x-amz-s3session-token is for directory buckets "
                                            "(" + EXPRESS_SUFFIX + ") only.")


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128


def write_private(path, text):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", default="127.0.0.1:0")
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--ttl", type=int, default=3600)
    ap.add_argument("--session-ttl", type=int, default=300)
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--upstream-key", required=True)
    ap.add_argument("--upstream-secret", required=True)
    ap.add_argument("--region", default="us-east-1")
    args = ap.parse_args()

    host, port = args.listen.rsplit(":", 1)
    if not host.startswith("127.") and host != "localhost":
        sys.exit("credserver: loopback only")
    srv = Server((host, int(port)), Handler)
    srv.state = State(args)
    base = f"http://127.0.0.1:{srv.server_address[1]}"

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    srv.public_key = key.public_key()
    srv.sa = {"type": "service_account", "project_id": "tierfs-test",
              "private_key_id": secrets.token_hex(20), "private_key": pem,
              "client_email": "loader@tierfs-test.iam.gserviceaccount.com",
              "client_id": "1234567890", "token_uri": base + "/token"}
    srv.user = {"type": "authorized_user", "client_id": "tierfs-test.apps",
                "client_secret": secret(12), "refresh_token": "1//" + secret(30),
                "token_uri": base + "/token"}
    srv.web_token = "eyJ" + secret(40)
    srv.container_token = secret(20)
    os.makedirs(args.dir, exist_ok=True)
    write_private(os.path.join(args.dir, "sa.json"), json.dumps(srv.sa, indent=2))
    write_private(os.path.join(args.dir, "user.json"), json.dumps(srv.user, indent=2))
    write_private(os.path.join(args.dir, "web-token"), srv.web_token + "\n")
    write_private(os.path.join(args.dir, "container-token"), srv.container_token + "\n")
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"{srv.server_address[1]}\n")
    os.rename(tmp, args.port_file)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
