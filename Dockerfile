# The csr_marl OpenEnv server: `csr-marl serve` on port 8000.
#
#   docker build -t csr-marl-serve .
#   docker run --rm -p 8000:8000 csr-marl-serve
#   docker run --rm -p 8000:8000 csr-marl-serve csr-marl serve --host 0.0.0.0 --scenario tasks/resolve
#
# Then: openenv validate --url http://127.0.0.1:8000
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Only what the package needs: no virtual environments, results or caches from the build context.
COPY pyproject.toml README.md ./
COPY csr_marl ./csr_marl
COPY scenarios ./scenarios
COPY configs ./configs

# Editable, as in development: the package finds scenarios/ and configs/ beside its source (/app).
RUN pip install -e ".[serve]" \
    && useradd --create-home --uid 1000 csr \
    && csr-marl scenarios > /dev/null

USER csr
EXPOSE 8000

HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=2)"

CMD ["csr-marl", "serve", "--host", "0.0.0.0", "--port", "8000"]
