-- wrk script: POST /bookmarks, each with a URL no other request uses (a run id, the
-- thread's number and a counter). The folder id comes from BOOKMARKS_FOLDER (scripts/load).
local folder = os.getenv("BOOKMARKS_FOLDER")
local run = tostring(os.time())
local threads = {}
local counter = 0

function setup(thread)
    table.insert(threads, thread)
    thread:set("thread_number", #threads)
end

function request()
    counter = counter + 1
    local body = string.format(
        '{"folderId": "%s", "url": "https://load.example/%s/%d/%d", "title": "Load %d"}',
        folder, run, thread_number, counter, counter)
    return wrk.format("POST", "/bookmarks", { ["Content-Type"] = "application/json" }, body)
end

-- Counts answers other than 201 (wrk itself counts only socket errors and non-2xx/3xx).
unexpected = 0
function response(status, headers, body)
    if status ~= 201 then unexpected = unexpected + 1 end
end

function done(summary, latency, requests)
    local total = 0
    for _, thread in ipairs(threads) do total = total + (thread:get("unexpected") or 0) end
    io.write(string.format("answers other than 201: %d\n", total))
end
