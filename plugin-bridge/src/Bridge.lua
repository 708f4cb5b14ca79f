-- Bridge.lua: the long-poll loop between Studio and the daemon.
--
--   GET  /poll?instance=<guid>&role=edit|server|client&place=<id>&name=<place name>
--        held by the daemon up to 15 s; answers {"hasCommand":true,"id","tool","args"} or
--        {"hasCommand":false}. Each poll also tells the daemon this Studio is alive.
--   POST /result     {"id","ok":true,"result"} | {"id","ok":false,"error"}
--   POST /console    {"instance","entries":[{"level","message","ts"}]}
--   POST /disconnect {"instance"}  when the user clicks Disconnect or the plugin unloads, so the
--        daemon fails this Studio's unanswered calls at once instead of after a timeout.
--
-- The loop keeps polling while commands run (they run in their own threads): the daemon takes an
-- instance that stops polling for ~20 s as gone and fails the commands it holds.
--
-- There is no separate health loop: an idle Studio makes about 4 requests a minute. Failures back
-- off exponentially (1 s doubling to 30 s, with jitter); failures only the user can fix (HTTP
-- disabled, permission refused, bad URL, token) wait the longest and say what to do; Roblox's
-- own rate limit waits at least 30 s, the time Roblox stalls requests for.

local Http = require(script.Parent.Http)

local Bridge = {}
Bridge.__index = Bridge

Bridge.BACKOFF = { initial = 1, factor = 2, max = 30, jitter = 0.2 }
Bridge.RESULT_RETRIES = 3
Bridge.PERMISSION_RETRIES = { 2, 4, 8 } -- seconds, before the long wait
Bridge.BUSY_MAX = 2 -- seconds: too many requests in flight at once is over quickly
Bridge.MAX_RESULT_BYTES = 8 * 1024 * 1024 -- the daemon refuses bigger bodies

-- The pause after the n-th consecutive failure of the given kind. rnd() in [0, 1).
function Bridge.backoffDelay(failures, kind, cfg, rnd)
	cfg = cfg or Bridge.BACKOFF
	local n = failures
	if n < 1 then
		n = 1
	end
	local delay = cfg.initial * cfg.factor ^ (n - 1)
	if delay > cfg.max then
		delay = cfg.max
	end
	if kind == "permission" and n <= #Bridge.PERMISSION_RETRIES then
		-- The user may be answering Studio's permission prompt right now: look again soon.
		delay = Bridge.PERMISSION_RETRIES[n]
	elseif Http.NEEDS_USER[kind] then
		delay = cfg.max
	end
	if kind == "busy" then
		delay = math.min(delay, Bridge.BUSY_MAX)
	end
	if kind == "rate_limit" and delay < 30 then
		delay = 30
	end
	if rnd ~= nil and cfg.jitter ~= nil then
		delay = delay * (1 + cfg.jitter * rnd())
	end
	return delay
end

-- opts: http (an Http instance), json {encode, decode}, url, instanceId,
-- identity() -> {role, placeId, placeName, parent?}, executorFactory(deliver) -> Executor,
-- console (Console or nil), spawn, wait, random, onState(state, detail), log(message).
function Bridge.new(opts)
	local self = setmetatable({}, Bridge)
	self.http = assert(opts.http, "Bridge.new: http required")
	self.json = assert(opts.json, "Bridge.new: json required")
	self.url = string.gsub(assert(opts.url, "Bridge.new: url required"), "/+$", "")
	self.instanceId = assert(opts.instanceId, "Bridge.new: instanceId required")
	self.identity = opts.identity or function()
		return { role = "edit", placeId = 0, placeName = "Place" }
	end
	self.executorFactory = assert(opts.executorFactory, "Bridge.new: executorFactory required")
	self.console = opts.console
	self.spawn = assert(opts.spawn, "Bridge.new: spawn required")
	self.wait = assert(opts.wait, "Bridge.new: wait required")
	self.random = opts.random or math.random
	self.onState = opts.onState or function() end
	self.log = opts.log or function() end
	self.backoff = opts.backoff or Bridge.BACKOFF
	self.running = false
	self.generation = 0
	self.failures = 0
	self.state = "disconnected"
	self.polls = 0
	return self
end

function Bridge:setState(state, detail)
	if self.state == state and self.detail == detail then
		return
	end
	self.state = state
	self.detail = detail
	if self.console ~= nil then
		self.console:setEnabled(state == "connected")
	end
	self.onState(state, detail)
end

function Bridge:pollUrl()
	local who = self.identity()
	return self.url .. "/poll?instance=" .. Http.encode(self.instanceId)
		.. "&role=" .. Http.encode(who.role or "edit")
		.. "&place=" .. Http.encode(who.placeId or 0)
		.. "&name=" .. Http.encode(who.placeName or "")
		.. (who.parent and ("&parent=" .. Http.encode(who.parent)) or "")
end

-- Turns a failed Http answer into {kind, detail} for the widget.
function Bridge:explain(res)
	local kind = res.kind
	if kind == "status" then
		local s = res.status
		if s == 401 then
			kind = "unauthorized"
		elseif s == 403 then
			kind = "forbidden"
		elseif s == 404 or s == 405 then
			kind = "not_runbox"
		elseif s == 429 then
			kind = "rate_limit"
		else
			kind = "server"
		end
		local detail = Http.advice(kind, self.url, s)
		local okDecode, msg = pcall(self.json.decode, res.body or "")
		if okDecode and type(msg) == "table" and type(msg.error) == "string" then
			detail = detail .. " The daemon says: " .. msg.error
		end
		return kind, detail
	end
	return kind, Http.advice(kind, self.url, res.message)
end

-- One poll. Returns {ok = true, command = cmd | nil} or {ok = false, kind, detail}.
function Bridge:pollOnce()
	self.polls = self.polls + 1
	local res = self.http:send("GET", self:pollUrl(), nil)
	if not res.ok then
		local kind, detail = self:explain(res)
		return { ok = false, kind = kind, detail = detail, message = res.message }
	end
	local okDecode, msg = pcall(self.json.decode, res.body)
	if not okDecode or type(msg) ~= "table" then
		return { ok = false, kind = "bad_answer", detail = Http.advice("bad_answer", self.url) }
	end
	if msg.hasCommand == true and msg.id ~= nil and msg.tool ~= nil then
		return { ok = true, command = { id = tostring(msg.id), tool = tostring(msg.tool), args = msg.args } }
	end
	return { ok = true }
end

-- POSTs a JSON body; retries transport failures (the daemon ignores repeated answers).
function Bridge:post(path, body, retries)
	local last = nil
	for attempt = 0, retries or 0 do
		if attempt > 0 then
			self.wait(0.25 * attempt)
		end
		last = self.http:send("POST", self.url .. path, body)
		if last.ok or last.kind == "status" then
			return last
		end
	end
	return last
end

-- Encodes and sends one answer; an answer that cannot be encoded or is too big becomes an error
-- answer, so the call fails with a reason instead of hanging until its deadline.
function Bridge:deliver(answer)
	local okEncode, body = pcall(self.json.encode, answer)
	if not okEncode then
		body = self.json.encode({
			id = answer.id,
			ok = false,
			error = "the plugin could not encode the result as JSON: " .. tostring(body),
		})
	elseif #body > Bridge.MAX_RESULT_BYTES then
		body = self.json.encode({
			id = answer.id,
			ok = false,
			error = "the result is " .. #body .. " bytes, over the " .. Bridge.MAX_RESULT_BYTES
				.. "-byte limit; ask for less (use limit, depth or a narrower path)",
		})
	end
	local res = self:post("/result", body, Bridge.RESULT_RETRIES)
	if not res.ok then
		self.log("could not deliver the answer to " .. tostring(answer.id) .. ": " .. tostring(res.message))
	end
	return res.ok
end

-- Sends one console batch (Console's send function).
function Bridge:sendConsole(entries)
	local okEncode, body = pcall(self.json.encode, { instance = self.instanceId, entries = entries })
	if not okEncode then
		return true -- unencodable lines are dropped rather than retried forever
	end
	local res = self:post("/console", body, 0)
	return res.ok
end

-- One GET /health when (re)connecting, so the widget says "Connected" at once instead of after
-- the first 15 s poll, and a wrong port or a missing token shows up immediately.
function Bridge:checkHealth()
	local res = self.http:send("GET", self.url .. "/health", nil)
	if not res.ok then
		local kind, detail = self:explain(res)
		return { ok = false, kind = kind, detail = detail, message = res.message }
	end
	local okDecode, msg = pcall(self.json.decode, res.body)
	if not okDecode or type(msg) ~= "table" or msg.service ~= "runboxd" then
		return { ok = false, kind = "not_runbox", detail = Http.advice("not_runbox", self.url) }
	end
	self.failures = 0
	self:setState("connected", nil)
	return { ok = true }
end

function Bridge:loop(generation)
	local executor = self.executor
	while self.running and self.generation == generation do
		local res
		if self.state ~= "connected" then
			res = self:checkHealth()
		end
		if res == nil or res.ok then
			res = self:pollOnce()
		end
		if not self.running or self.generation ~= generation then
			break -- disconnected meanwhile: a command handed to this poll is not run
		end
		if res.ok then
			self.failures = 0
			self.lastLogged = nil
			self:setState("connected", nil)
			if res.command ~= nil then
				executor:submit(res.command)
			end
			if res.command == nil then
				self.wait() -- a frame between empty polls
			end
		else
			self.failures = self.failures + 1
			local delay = Bridge.backoffDelay(self.failures, res.kind, self.backoff, self.random)
			local needsUser = Http.NEEDS_USER[res.kind] == true
			self:setState(needsUser and "blocked" or "retrying", res.detail)
			if res.detail ~= self.lastLogged then
				-- Once per kind of trouble, not once per retry: the Output stays readable.
				self.lastLogged = res.detail
				self.log(tostring(res.detail) .. " (" .. tostring(res.message or res.kind) .. ")")
			end
			self.lastDelay = delay
			self.wait(delay)
		end
	end
end

-- Starts polling (no-op when already running).
function Bridge:start()
	if self.running then
		return
	end
	self.running = true
	self.generation = self.generation + 1
	self.failures = 0
	local bridge = self
	self.executor = self.executorFactory(function(answer)
		return bridge:deliver(answer)
	end)
	self:setState("connecting", self.url)
	local generation = self.generation
	self.spawn(function()
		bridge:loop(generation)
	end)
end

-- Stops polling and tells the daemon at once (best effort, one attempt).
function Bridge:stop(reason)
	if not self.running then
		return
	end
	self.running = false
	if self.executor ~= nil then
		self.executor:stop()
	end
	self:setState("disconnected", reason)
	local okEncode, body = pcall(self.json.encode, { instance = self.instanceId })
	if okEncode then
		self.http:send("POST", self.url .. "/disconnect", body)
	end
end

return Bridge
