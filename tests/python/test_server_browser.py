"""Browser safety: without --api-key a web page cannot drive the server. A cross-origin request is refused
(403) unless its Origin was given with --cors-origin, a POST body must be application/json (415, so a page
cannot send a preflight-free text/plain request), and on a loopback bind the Host must be a loopback name
(403: a DNS-rebinding page's Host is its own name). Listed origins get CORS headers and preflight answers;
with --api-key the old behaviour stays, plus CORS for listed origins."""
import json
import socket

import pytest
import requests

from server_harness import Server, tiny_model_path

BODY = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
APP = "http://app.example:3000"


@pytest.fixture(scope="module")
def open_server(tmp_path_factory):
    srv = Server(tiny_model_path(tmp_path_factory), "--ctx", "128", "--parallel", "1", "--cors-origin", APP,
                 "--cors-origin", "https://other.example/")
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def keyed_server(tmp_path_factory):
    srv = Server(tiny_model_path(tmp_path_factory), "--ctx", "128", "--parallel", "1", "--api-key", "k",
                 "--cors-origin", APP)
    yield srv
    srv.stop()


def raw(port, request: bytes):
    """(status, headers, body) of one raw request (the answer closes the connection)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (x.split(":", 1) for x in lines[1:])}
    return int(lines[0].split()[1]), headers, body


def post_raw(port, content_type, body=json.dumps(BODY), extra=b"", host=b"127.0.0.1"):
    data = body.encode()
    ct = b"Content-Type: " + content_type.encode() + b"\r\n" if content_type is not None else b""
    return raw(port, b"POST /v1/chat/completions HTTP/1.1\r\nHost: " + host + b"\r\n" + ct + extra +
               b"Connection: close\r\nContent-Length: " + str(len(data)).encode() + b"\r\n\r\n" + data)


def test_cross_origin_text_plain_post_is_refused(open_server):
    status, _, body = post_raw(open_server.port, "text/plain", extra=b"Origin: http://evil.example\r\n")
    assert status == 403, body
    err = json.loads(body)["error"]
    assert err["param"] == "Origin" and "http://evil.example" in err["message"] and "--cors-origin" in err["message"]
    # The same from a listed origin is still no JSON: 415 naming the header.
    status, _, body = post_raw(open_server.port, "text/plain", extra=f"Origin: {APP}\r\n".encode())
    assert status == 415 and json.loads(body)["error"]["param"] == "Content-Type", body


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data",
                                          None])
def test_post_without_json_content_type_is_refused(open_server, content_type):
    status, _, body = post_raw(open_server.port, content_type)
    assert status == 415, body
    err = json.loads(body)["error"]
    assert err["param"] == "Content-Type" and "application/json" in err["message"], err


def test_json_content_type_with_parameters_is_accepted(open_server):
    status, _, body = post_raw(open_server.port, "Application/JSON; charset=utf-8")
    assert status == 200, body


@pytest.mark.parametrize("host", [b"evil.example", b"evil.example:8080", b"127.0.0.1.evil.example", b"localhostx",
                                  b"[::2]", b"10.0.0.1"])
def test_a_foreign_host_is_refused_on_a_loopback_bind(open_server, host):
    status, _, body = raw(open_server.port, b"GET /v1/models HTTP/1.1\r\nHost: " + host +
                          b"\r\nConnection: close\r\n\r\n")
    assert status == 403, body
    err = json.loads(body)["error"]
    assert err["param"] == "Host" and host.decode() in err["message"], err
    status, _, body = post_raw(open_server.port, "application/json", host=host)
    assert status == 403, body


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST:{port}", "127.0.0.1", "127.0.0.1:{port}", "[::1]",
                                  "[::1]:{port}", "localhost:80"])
def test_loopback_hosts_are_served(open_server, host):
    h = host.format(port=open_server.port).encode()
    status, _, body = raw(open_server.port, b"GET /v1/models HTTP/1.1\r\nHost: " + h + b"\r\nConnection: close\r\n\r\n")
    assert status == 200, body


def test_listed_origin_gets_cors(open_server):
    url = open_server.url + "/v1/chat/completions"
    pre = requests.options(url, headers={"Origin": APP, "Access-Control-Request-Method": "POST",
                                         "Access-Control-Request-Headers": "content-type, authorization"}, timeout=10)
    assert pre.status_code == 204, pre.text
    assert pre.headers["Access-Control-Allow-Origin"] == APP
    assert "POST" in pre.headers["Access-Control-Allow-Methods"]
    assert pre.headers["Access-Control-Allow-Headers"] == "content-type, authorization"
    r = requests.post(url, json=BODY, headers={"Origin": APP}, timeout=30)
    assert r.status_code == 200 and r.headers["Access-Control-Allow-Origin"] == APP
    assert r.headers["Vary"] == "Origin"
    # Errors carry it too (the page can read why it was refused).
    r = requests.post(url, json={"messages": "x"}, headers={"Origin": APP}, timeout=30)
    assert r.status_code == 400 and r.headers["Access-Control-Allow-Origin"] == APP
    # The second origin was given with a trailing slash; browsers send none.
    r = requests.get(open_server.url + "/v1/models", headers={"Origin": "https://other.example"}, timeout=10)
    assert r.status_code == 200 and r.headers["Access-Control-Allow-Origin"] == "https://other.example"


def test_unlisted_origin_gets_no_cors(open_server):
    for method in ("OPTIONS", "GET", "POST"):
        r = requests.request(method, open_server.url + "/v1/models", headers={"Origin": "http://evil.example",
                                                                           "Content-Type": "application/json"},
                             timeout=10)
        assert r.status_code == 403 and "Access-Control-Allow-Origin" not in r.headers, (method, r.text)
    r = requests.get(open_server.url + "/health", headers={"Origin": "null"}, timeout=10)
    assert r.status_code == 403


def test_requests_without_origin_still_work(open_server):
    r = requests.post(open_server.url + "/v1/chat/completions", json=BODY, timeout=30)
    assert r.status_code == 200 and "Access-Control-Allow-Origin" not in r.headers
    r = requests.post(open_server.url + "/v1/messages", json={"max_tokens": 1, **BODY}, timeout=30)
    assert r.status_code == 200
    r = requests.post(open_server.url + "/v1/messages", data="{}", headers={"Content-Type": "text/plain"}, timeout=30)
    assert r.status_code == 415 and r.json()["type"] == "error", r.text


def test_with_an_api_key_the_old_rules_stay_and_listed_origins_get_cors(keyed_server):
    key = b"Authorization: Bearer k\r\n"
    status, _, body = post_raw(keyed_server.port, "text/plain", extra=key)
    assert status == 200, body
    status, headers, body = post_raw(keyed_server.port, "application/json",
                                     extra=key + b"Origin: http://evil.example\r\n", host=b"evil.example")
    assert status == 200 and "access-control-allow-origin" not in headers, body
    status, headers, body = post_raw(keyed_server.port, "application/json", extra=key + f"Origin: {APP}\r\n".encode())
    assert status == 200 and headers["access-control-allow-origin"] == APP, body
    # The preflight carries no key and is answered for a listed origin.
    pre = requests.options(keyed_server.url + "/v1/chat/completions",
                           headers={"Origin": APP, "Access-Control-Request-Method": "POST"}, timeout=10)
    assert pre.status_code == 204 and pre.headers["Access-Control-Allow-Origin"] == APP
    assert "authorization" in pre.headers["Access-Control-Allow-Headers"].lower()
    # Without the key a listed origin still gets 401, with CORS so the page can read it.
    r = requests.post(keyed_server.url + "/v1/chat/completions", json=BODY, headers={"Origin": APP}, timeout=10)
    assert r.status_code == 401 and r.headers["Access-Control-Allow-Origin"] == APP
