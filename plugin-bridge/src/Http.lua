-- Http.lua: the plugin's one door to the daemon.
--
-- Every request the plugin makes goes through Http:send, which
--   * adds the X-Runbox-Plugin header (the daemon refuses plugin routes without it, and a web
--     page cannot send it without a CORS preflight the daemon never grants),
--   * never throws: HttpService:RequestAsync raises on refusals and network failures, and a raised
--     error in the poll loop would kill it; the error is classified instead (Http.classify) so
--     the widget can tell the user what to do,
--   * keeps a sliding one-minute window of sent requests and waits rather than exceed
--     Http.DEFAULT_LIMIT. Roblox allows 500 requests a minute per place, shared by every plugin,
--     and stalls all of them for ~30 s when the budget is spent, so Runbox stays well below it.
--
-- The transport is injected (opts.request): in Studio it is HttpService:RequestAsync; the tests
-- pass LuaSocket or a fake. Written in the Lua 5.1 subset of Luau so it runs under lua5.1 too.

local Http = {}
Http.__index = Http

Http.PLUGIN_HEADER = "X-Runbox-Plugin"
Http.DEFAULT_LIMIT = 240 -- requests per minute; Roblox's budget is 500 for all plugins together

-- What each failure kind means for the user. %s in connect/bad_url is the daemon URL.
Http.ADVICE = {
	http_disabled = "Studio says HTTP requests are not enabled. Open Home > Game Settings > Security, "
		.. "turn on \"Allow HTTP Requests\" (or run game:GetService(\"HttpService\").HttpEnabled = true "
		.. "in the command bar), then click Connect.",
	permission = "Studio blocked the plugin from reaching the daemon. Open Plugins > Manage Plugins, "
		.. "find Runbox Bridge, allow its web access to 127.0.0.1 / localhost, then click Connect.",
	connect = "Nothing answers at %s. Start the daemon (runboxd; an MCP client running runbox starts "
		.. "it for you) or fix the URL. Retrying.",
	timeout = "The daemon did not answer in time. Retrying.",
	busy = "Studio has too many HTTP requests in flight. Retrying in a moment.",
	rate_limit = "Roblox's limit of 500 HTTP requests a minute is used up (all plugins share it). "
		.. "Waiting before retrying.",
	bad_url = "The daemon URL %s is not valid: use http://127.0.0.1:7766 (or your --port).",
	unauthorized = "The daemon wants a token (it runs with RUNBOX_TOKEN): enter it in the Token box.",
	forbidden = "The daemon refused the plugin (HTTP 403). Use an address the daemon accepts, such as "
		.. "http://127.0.0.1:7766, and check that this is a Runbox daemon.",
	not_runbox = "%s answered, but it is not a Runbox daemon (no /poll). Check the port.",
	server = "The daemon failed (HTTP %s). Retrying.",
	bad_answer = "The daemon sent an answer the plugin cannot read. Retrying.",
	other = "Request failed: %s. Retrying.",
}

-- Kinds that only the user can fix: retrying fast would just spend the request budget.
Http.NEEDS_USER = {
	http_disabled = true,
	permission = true,
	bad_url = true,
	unauthorized = true,
	forbidden = true,
	not_runbox = true,
}

local function contains(haystack, needle)
	return string.find(haystack, needle, 1, true) ~= nil
end

-- Maps the text of a RequestAsync error to a kind. The texts are Studio's (HttpError enum names
-- such as ConnectFail/TimedOut appear in them) and LuaSocket's, for the tests.
function Http.classify(message)
	local m = string.lower(tostring(message or ""))
	if contains(m, "not enabled") or contains(m, "httpenabled") then
		return "http_disabled"
	end
	-- Too many requests in flight at once (HttpError.TooManyOutstandingRequests) is over as soon
	-- as one returns; the per-minute budget ("Number of requests exceeded limit") is not.
	if contains(m, "toomanyoutstanding") then
		return "busy"
	end
	if contains(m, "exceeded limit") or contains(m, "too many requests") then
		return "rate_limit"
	end
	if contains(m, "permission") or contains(m, "denied") or contains(m, "not allowed") or contains(m, "blocked") then
		return "permission"
	end
	if contains(m, "invalidurl") or contains(m, "invalid url") or contains(m, "dnsresolve")
		or contains(m, "url must") or contains(m, "must use http") then
		return "bad_url"
	end
	if contains(m, "timedout") or contains(m, "timed out") or contains(m, "timeout") then
		return "timeout"
	end
	if contains(m, "connectfail") or contains(m, "connection refused") or contains(m, "connect")
		or contains(m, "closed") or contains(m, "netfail") or contains(m, "unreachable") then
		return "connect"
	end
	return "other"
end

-- The sentence shown in the widget for a failure.
function Http.advice(kind, url, detail)
	local text = Http.ADVICE[kind] or Http.ADVICE.other
	if kind == "connect" or kind == "bad_url" or kind == "not_runbox" then
		return string.format(text, tostring(url))
	end
	if kind == "server" or kind == "other" then
		return string.format(text, tostring(detail))
	end
	return text
end

-- opts.request(req) -> response: RequestAsync semantics (req has Url, Method, Headers, Body;
-- the response has Success, StatusCode, StatusMessage, Body; raises on failure).
-- opts.pcall (default pcall; yield-safe wrappers under lua5.1), opts.clock/opts.wait (seconds),
-- opts.limit (requests per minute), opts.token (bearer token or nil).
function Http.new(opts)
	local self = setmetatable({}, Http)
	self.request = assert(opts.request, "Http.new: request function required")
	self.pcall = opts.pcall or pcall
	self.clock = opts.clock or os.clock
	self.wait = opts.wait
	self.limit = opts.limit or Http.DEFAULT_LIMIT
	self.token = opts.token
	self.sent = {} -- send times inside the last minute, oldest first
	self.count = 0 -- every request ever sent (for tests and the widget)
	return self
end

-- Drops send times older than a minute; waits while the window is full.
function Http:throttle()
	while true do
		local now = self.clock()
		while self.sent[1] ~= nil and now - self.sent[1] >= 60 do
			table.remove(self.sent, 1)
		end
		if #self.sent < self.limit then
			table.insert(self.sent, now)
			return
		end
		if not self.wait then
			-- No way to wait (a synchronous test): go ahead rather than deadlock.
			table.insert(self.sent, now)
			return
		end
		self.wait(60 - (now - self.sent[1]) + 0.01)
	end
end

-- Sends one request. Returns a table:
--   {ok = true, status = 200, body = "..."} for a 2xx answer,
--   {ok = false, kind = "...", status = n?, body = "..."?, message = "..."} otherwise.
-- Non-2xx answers get kind "status"; callers decide what a status means for them.
function Http:send(method, url, body)
	local headers = {}
	headers[Http.PLUGIN_HEADER] = "1"
	if body ~= nil then
		headers["Content-Type"] = "application/json"
	end
	if self.token ~= nil and self.token ~= "" then
		headers["Authorization"] = "Bearer " .. self.token
	end
	local req = { Url = url, Method = method, Headers = headers }
	if body ~= nil then
		req.Body = body
	end
	self:throttle()
	self.count = self.count + 1
	local ok, res = self.pcall(self.request, req)
	if not ok then
		local message = tostring(res)
		return { ok = false, kind = Http.classify(message), message = message }
	end
	if type(res) ~= "table" or type(res.StatusCode) ~= "number" then
		return { ok = false, kind = "bad_answer", message = "no HTTP status in the answer" }
	end
	local status = res.StatusCode
	if status >= 200 and status <= 299 then
		return { ok = true, status = status, body = res.Body or "" }
	end
	local message = "HTTP " .. tostring(status)
	if res.StatusMessage ~= nil and res.StatusMessage ~= "" then
		message = message .. " " .. tostring(res.StatusMessage)
	end
	return { ok = false, kind = "status", status = status, body = res.Body or "", message = message }
end

-- Percent-encodes a query value (RFC 3986 unreserved characters pass).
function Http.encode(value)
	return (string.gsub(tostring(value), "[^%w%-%._~]", function(c)
		return string.format("%%%02X", string.byte(c))
	end))
end

return Http
