# Conveniences over scripts/; the scripts need nothing but python3.
.PHONY: test demo bench clean
test:
	./scripts/test
demo:
	./scripts/demo
bench:
	./scripts/bench
clean:
	rm -rf .venv .pytest_cache .mypy_cache .ruff_cache .hypothesis
