# The wheel is built where a C compiler is: setup.py compiles Luna's simulator with mypyc
# (engine/bots/sim.py, twice her deals in her budget). The image that runs has none.
FROM python:3.11 AS build
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY constraints.txt ./
COPY engine ./engine
COPY events ./events
COPY api ./api
COPY workers ./workers
RUN pip wheel --no-cache-dir --wheel-dir /wheels -c constraints.txt .

FROM python:3.11-slim
WORKDIR /app
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links /wheels escoba && rm -rf /wheels \
    && useradd --system escoba
USER escoba
EXPOSE 8000
CMD ["escoba", "serve", "--host", "0.0.0.0", "--port", "8000"]
