"""`saker template FILE.jinja --context CONTEXT.json --now ISO8601` against the jinja2 golden renders."""
import json

from conftest import shared_data


def test_every_golden_case_through_the_cli(saker, tmp_path):
    root = shared_data("chat_templates")
    files = sorted(root.glob("golden/*.json"))
    assert files
    failures, n = [], 0
    for f in files:
        spec = json.loads(f.read_text(encoding="utf-8"))
        template = root / "templates" / spec["template"]
        for i, case in enumerate(spec["cases"]):
            ctx = tmp_path / f"{f.stem}-{i}.json"
            ctx.write_text(json.dumps(case["context"], ensure_ascii=False), encoding="utf-8")
            proc = saker("template", template, "--context", ctx, "--now", "2026-01-15T09:30:00", check=False)
            n += 1
            if "rendered" in case:
                if proc.returncode != 0 or proc.stdout.decode("utf-8") != case["rendered"]:
                    failures.append(f"{f.stem} case {i}: exit {proc.returncode} {proc.stderr.decode()[:200]}")
            elif "SecurityError" not in case.get("error", ""):
                if proc.returncode == 0:
                    failures.append(f"{f.stem} case {i}: rendered but jinja2 refused ({case['error'][:80]})")
                elif not proc.stderr.decode().startswith("error:"):
                    failures.append(f"{f.stem} case {i}: no 'error:' message")
    assert n >= 90
    assert not failures, "\n".join(failures)


def test_template_errors_are_clear(saker, tmp_path):
    bad = tmp_path / "bad.jinja"
    bad.write_text("{% for m in messages %}{{ m.content }\n", encoding="utf-8")
    ctx = tmp_path / "ctx.json"
    ctx.write_text('{"messages": []}', encoding="utf-8")
    proc = saker("template", bad, "--context", ctx, check=False)
    assert proc.returncode == 1
    assert "line 1" in proc.stderr.decode()
    raising = tmp_path / "raise.jinja"
    raising.write_text("{{ raise_exception('no system role here') }}", encoding="utf-8")
    proc = saker("template", raising, "--context", ctx, check=False)
    assert proc.returncode == 1 and "no system role here" in proc.stderr.decode()
    proc = saker("template", tmp_path / "missing.jinja", check=False)
    assert proc.returncode == 1
