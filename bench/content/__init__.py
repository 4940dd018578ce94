"""Helpers of `bench.bench_main_content`: the page sets (`sets`), their scoring (`scoring`), the
extractors' own venvs (`venvs`) and the script each extractor runs in its venv (`worker`)."""
