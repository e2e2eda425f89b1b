# The csr_marl OpenEnv server: `csr-marl serve` on $PORT (8000 here; a Hugging Face Space sets 7860).
#
#   docker build -t csr-marl-serve .
#   docker run --rm -p 8000:8000 csr-marl-serve
#   docker run --rm -p 8000:8000 -e CSR_MARL_AUTH_TOKEN=$(python -c 'import secrets; print(secrets.token_urlsafe())') csr-marl-serve
#   docker run --rm -p 8000:8000 csr-marl-serve csr-marl serve --host 0.0.0.0 --scenario tasks/resolve
#
# Then: openenv validate --url http://127.0.0.1:8000   (docs/serve/deploy.md: limits, token, Spaces)
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PORT=8000 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Only what the package needs: no virtual environments, results or caches from the build context.
COPY pyproject.toml setup.py README.md ./
COPY tools ./tools
COPY csr_marl ./csr_marl
COPY scenarios ./scenarios
COPY configs ./configs

# Editable, as in development: the package finds scenarios/ and configs/ beside its source (/app).
RUN pip install -e ".[serve]" \
    && useradd --create-home --uid 1000 csr \
    && csr-marl scenarios > /dev/null

# Numeric, so a runtime that refuses to run as root (runAsNonRoot) can check it without /etc/passwd.
USER 1000:1000
EXPOSE 8000

# Exec form (no shell); the probe sends the bearer token when one is set.
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request as u; t = os.environ.get('CSR_MARL_AUTH_TOKEN'); u.urlopen(u.Request('http://127.0.0.1:' + os.environ.get('PORT', '8000') + '/health', headers={'Authorization': 'Bearer ' + t} if t else {}), timeout=2)"]

# --port defaults to $PORT; --auth-token to $CSR_MARL_AUTH_TOKEN.
CMD ["csr-marl", "serve", "--host", "0.0.0.0"]
