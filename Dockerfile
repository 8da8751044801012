FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY engine ./engine
COPY events ./events
COPY api ./api
COPY workers ./workers
RUN pip install --no-cache-dir . && useradd --system escoba
USER escoba
EXPOSE 8000
CMD ["escoba", "serve", "--host", "0.0.0.0", "--port", "8000"]
