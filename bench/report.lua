-- wrk script of bench/run.py: the request comes from the environment, the summary is one JSON line.
wrk.method = os.getenv("BENCH_METHOD") or "GET"
local body_file = os.getenv("BENCH_BODY_FILE")
if body_file then
  local f = io.open(body_file, "rb")
  wrk.body = f:read("*a")
  f:close()
end
wrk.headers["Accept"] = "application/vnd.api+json"
local content_type = os.getenv("BENCH_CONTENT_TYPE")
if content_type then wrk.headers["Content-Type"] = content_type end
local auth = os.getenv("BENCH_AUTH")
if auth then wrk.headers["Authorization"] = auth end
local if_none_match = os.getenv("BENCH_IF_NONE_MATCH")
if if_none_match then wrk.headers["If-None-Match"] = if_none_match end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH-JSON {"requests": %d, "duration_us": %d, "p50_us": %d, "p99_us": %d, "status_errors": %d, ' ..
    '"connect_errors": %d, "read_errors": %d, "write_errors": %d, "timeouts": %d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.status, e.connect, e.read, e.write, e.timeout))
end
