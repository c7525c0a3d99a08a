"""auth.p256: ECDSA over NIST P-256 with SHA-256 (JOSE ES256), in pure Python.

Verification (SEC 1 §4.1.4) takes the raw `R‖S` signature JOSE uses (RFC 7518 §3.4), not DER;
it refuses r or s outside [1, n-1] and a public key that is not a point of the curve
(invalid-curve attacks), and uses Jacobian coordinates with a = -3 and Shamir's trick, so one
verify costs a couple of milliseconds. Signing (for a client's `private_key_jwt` or DPoP proof)
draws k deterministically (RFC 6979 §3.2). Rules: standard library only; no key formats here
(auth.jose parses JWKs); Python integers are not constant-time, so signing with a long-lived key
leaks timing: use it for short-lived client keys only.
"""

from __future__ import annotations

import hashlib
import hmac

P = 2**256 - 2**224 + 2**192 + 2**96 - 1
A = P - 3
B = 0x5AC635D8AA3A93E7B3EBBD55769886BC651D06B0CC53B0F63BCE3C3E27D2604B
N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
G = (0x6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296,
     0x4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5)

Jacobian = tuple[int, int, int]
INFINITY: Jacobian = (1, 1, 0)


def on_curve(x: int, y: int) -> bool:
    """Whether (x, y) is a point of P-256 (the point at infinity has no affine form)."""
    return 0 <= x < P and 0 <= y < P and (y * y - (x * x * x + A * x + B)) % P == 0


def _double(pt: Jacobian) -> Jacobian:
    x1, y1, z1 = pt
    if z1 == 0 or y1 == 0:
        return INFINITY
    delta = z1 * z1 % P
    gamma = y1 * y1 % P
    beta = x1 * gamma % P
    alpha = 3 * (x1 - delta) * (x1 + delta) % P
    x3 = (alpha * alpha - 8 * beta) % P
    z3 = ((y1 + z1) ** 2 - gamma - delta) % P
    y3 = (alpha * (4 * beta - x3) - 8 * gamma * gamma) % P
    return x3, y3, z3


def _add(p1: Jacobian, p2: Jacobian) -> Jacobian:
    if p1[2] == 0:
        return p2
    if p2[2] == 0:
        return p1
    x1, y1, z1 = p1
    x2, y2, z2 = p2
    z1z1, z2z2 = z1 * z1 % P, z2 * z2 % P
    u1, u2 = x1 * z2z2 % P, x2 * z1z1 % P
    s1, s2 = y1 * z2 * z2z2 % P, y2 * z1 * z1z1 % P
    if u1 == u2:
        return _double(p1) if s1 == s2 else INFINITY
    h = (u2 - u1) % P
    i = 4 * h * h % P
    j = h * i % P
    r = 2 * (s2 - s1) % P
    v = u1 * i % P
    x3 = (r * r - j - 2 * v) % P
    y3 = (r * (v - x3) - 2 * s1 * j) % P
    z3 = ((z1 + z2) ** 2 - z1z1 - z2z2) * h % P
    return x3, y3, z3


def _affine_x(pt: Jacobian) -> int | None:
    if pt[2] == 0:
        return None
    zinv = pow(pt[2], -1, P)
    return pt[0] * zinv * zinv % P


def _affine(pt: Jacobian) -> tuple[int, int]:
    zinv = pow(pt[2], -1, P)
    zinv2 = zinv * zinv % P
    return pt[0] * zinv2 % P, pt[1] * zinv2 * zinv % P


def _twin_multiply(u1: int, p1: Jacobian, u2: int, p2: Jacobian) -> Jacobian:
    """u1·p1 + u2·p2 in one pass over the bits (Shamir's trick)."""
    both = _add(p1, p2)
    table = (INFINITY, p1, p2, both)
    acc = INFINITY
    for bit in range(max(u1.bit_length(), u2.bit_length()) - 1, -1, -1):
        acc = _double(acc)
        pick = ((u1 >> bit) & 1) | (((u2 >> bit) & 1) << 1)
        if pick:
            acc = _add(acc, table[pick])
    return acc


def _digest_int(message: bytes) -> int:
    return int.from_bytes(hashlib.sha256(message).digest(), "big")  # 256 bits: no truncation for P-256


def verify(x: int, y: int, message: bytes, signature: bytes) -> bool:
    """Whether `signature` (64 bytes, R‖S) is an ES256 signature of `message` by the key (x, y)."""
    if len(signature) != 64 or not on_curve(x, y):
        return False
    r = int.from_bytes(signature[:32], "big")
    s = int.from_bytes(signature[32:], "big")
    if not (1 <= r < N and 1 <= s < N):
        return False
    w = pow(s, -1, N)
    e = _digest_int(message)
    point = _twin_multiply(e * w % N, (G[0], G[1], 1), r * w % N, (x, y, 1))
    found = _affine_x(point)
    return found is not None and found % N == r


def public_key(d: int) -> tuple[int, int]:
    """The public point of the private scalar d (1 <= d < n)."""
    if not 1 <= d < N:
        raise ValueError("a P-256 private key is an integer in [1, n-1]")
    return _affine(_twin_multiply(d, (G[0], G[1], 1), 0, INFINITY))


def _rfc6979_k(d: int, digest: bytes) -> int:
    x = d.to_bytes(32, "big")
    h = (int.from_bytes(digest, "big") % N).to_bytes(32, "big")
    v, k = b"\x01" * 32, b"\x00" * 32
    k = hmac.new(k, v + b"\x00" + x + h, hashlib.sha256).digest()
    v = hmac.new(k, v, hashlib.sha256).digest()
    k = hmac.new(k, v + b"\x01" + x + h, hashlib.sha256).digest()
    v = hmac.new(k, v, hashlib.sha256).digest()
    while True:
        v = hmac.new(k, v, hashlib.sha256).digest()
        candidate = int.from_bytes(v, "big")
        if 1 <= candidate < N:
            return candidate
        k = hmac.new(k, v + b"\x00", hashlib.sha256).digest()
        v = hmac.new(k, v, hashlib.sha256).digest()


def sign(d: int, message: bytes) -> bytes:
    """An ES256 signature (R‖S, 64 bytes) of `message` with the private scalar d."""
    digest = hashlib.sha256(message).digest()
    e = int.from_bytes(digest, "big")
    k = _rfc6979_k(d, digest)
    while True:
        x = _affine_x(_twin_multiply(k, (G[0], G[1], 1), 0, INFINITY))
        assert x is not None
        r = x % N
        s = pow(k, -1, N) * (e + r * d) % N
        if r and s:
            return r.to_bytes(32, "big") + s.to_bytes(32, "big")
        k = k + 1 if k + 1 < N else 1  # practically unreachable
