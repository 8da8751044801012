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
# jemalloc under Python: the API's CPU a move some 4% lower than on the C library's malloc, whose
# large-block bins (a view's JSON, a frame) were 6% of the worker's CPU under perf (bench/games.py,
# paired: docs/benchmarks.md). The link gives it one path on any architecture.
RUN apt-get update && apt-get install -y --no-install-recommends libjemalloc2 && rm -rf /var/lib/apt/lists/* \
    && ln -s "$(ls /usr/lib/*-linux-gnu/libjemalloc.so.2)" /usr/local/lib/libjemalloc.so.2
ENV LD_PRELOAD=/usr/local/lib/libjemalloc.so.2
# ... and Python's own objects in it (pymalloc maps its arenas itself), on transparent huge pages where
# the host's kernel allows them, in one arena: the API's code finds its data out of the processor's
# caches on every move, and on huge pages that costs some 3% less CPU a socket move; one arena keeps an
# idle socket's memory as it was (docs/benchmarks.md; bench/_common.py HEAP). Luna's decisions take
# the same CPU either way.
ENV PYTHONMALLOC=malloc MALLOC_CONF=thp:always,narenas:1
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links /wheels escoba && rm -rf /wheels \
    && useradd --system escoba
USER escoba
EXPOSE 8000
CMD ["escoba", "serve", "--host", "0.0.0.0", "--port", "8000"]
