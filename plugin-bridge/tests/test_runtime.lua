-- tests/test_runtime.lua - the plugin runtime under lua5.1: Http (error recognition, request
-- budget, headers), Bridge (back-off, states, disconnect), Executor (read concurrency, write
-- serialization, undo recordings, id de-duplication), Console (batching), Main (widget,
-- settings, unload) and the bundle (build.lua), on a virtual clock.
--
--   lua5.1 plugin-bridge/tests/runner.lua plugin-bridge/tests/test_runtime.lua

local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
package.path = here .. "/fake/?.lua;" .. here .. "/?/init.lua;" .. package.path
local X = require("runtime_extras")
RUNBOX_BUILD_LIBRARY = true
local Build = dofile(here .. "/../build.lua")
local SRC = here .. "/../src"
local requireModule = Build.load(SRC)
local Http = requireModule("Http")
local Bridge = requireModule("Bridge")
local Executor = requireModule("Executor")
local Console = requireModule("Console")
local Main = requireModule("Main")
local JSON = X.json()

-- test, eq and truthy are runner.lua's globals.
local function ok(cond, what)
	truthy(cond, what or "assertion")
end

-- A fake daemon behind a RequestAsync-like function. Polls are held up to `window` seconds
-- (virtual), answered as soon as a command is queued.
local function fakeDaemon(sched)
	local d = { queue = {}, results = {}, consoles = {}, disconnects = {}, polls = {}, requests = {}, window = 15 }
	function d.request(req)
		table.insert(d.requests, req)
		if d.fail then
			error(d.fail, 0)
		end
		if d.status then
			return { Success = false, StatusCode = d.status, StatusMessage = "nope", Body = d.statusBody or "" }
		end
		local path, query = string.match(req.Url, "^https?://[^/]+(/[^?]*)%??(.*)$")
		if req.Method == "GET" and path == "/health" then
			return { Success = true, StatusCode = 200, Body = '{"ok":true,"service":"runboxd"}' }
		end
		if req.Method == "GET" and path == "/poll" then
			table.insert(d.polls, query)
			local waited = 0
			while #d.queue == 0 and waited < d.window do
				sched.wait(0.1)
				waited = waited + 0.1
			end
			if #d.queue > 0 then
				local c = table.remove(d.queue, 1)
				return { Success = true, StatusCode = 200, Body = JSON.encode({ hasCommand = true, id = c.id, tool = c.tool, args = c.args or {} }) }
			end
			return { Success = true, StatusCode = 200, Body = '{"hasCommand":false}' }
		end
		local body = JSON.decode(req.Body)
		if path == "/result" then
			table.insert(d.results, body)
		elseif path == "/console" then
			table.insert(d.consoles, body)
		elseif path == "/disconnect" then
			table.insert(d.disconnects, body)
		end
		return { Success = true, StatusCode = 200, Body = '{"ok":true}' }
	end
	return d
end

-- A tool table: name -> {readOnly, run}; runs are logged with their virtual start/end times.
local function toolset(sched, log)
	local t = {}
	local function slow(name, readOnly, seconds)
		t[name] = {
			readOnly = readOnly,
			run = function(args)
				table.insert(log, "start " .. name .. " " .. sched.clock())
				sched.wait(seconds)
				table.insert(log, "end " .. name .. " " .. sched.clock())
				if args.fail then
					error("it broke: " .. tostring(args.fail), 0)
				end
				return { tool = name, x = args.x }
			end,
		}
	end
	slow("read_a", true, 1)
	slow("read_b", true, 1)
	slow("write_a", false, 1)
	slow("write_b", false, 1)
	slow("undo", false, 0)
	slow("start_play", false, 50)
	slow("stop_play", false, 0)
	return {
		get = function(name)
			return t[name]
		end,
	}
end

---------------------------------------------------------------------------------------------
-- Http

test("http_classify_recognises_studio_errors", function()
	eq(Http.classify("Http requests are not enabled. Enable via game settings"), "http_disabled")
	eq(Http.classify("HTTP 403 (Plugin does not have permission to access this url)"), "permission")
	eq(Http.classify("User denied the request"), "permission")
	eq(Http.classify("Number of requests exceeded limit"), "rate_limit")
	eq(Http.classify("HttpError: ConnectFail"), "connect")
	eq(Http.classify("connection refused"), "connect")
	eq(Http.classify("HttpError: TimedOut"), "timeout")
	eq(Http.classify("HttpError: InvalidUrl"), "bad_url")
	eq(Http.classify("something odd"), "other")
	ok(string.find(Http.advice("http_disabled"), "Allow HTTP Requests", 1, true), "http advice names the setting")
	ok(string.find(Http.advice("permission"), "Manage Plugins", 1, true), "permission advice names the window")
	ok(string.find(Http.advice("connect", "http://127.0.0.1:9"), "http://127.0.0.1:9", 1, true), "connect advice names the URL")
end)

test("http_send_adds_plugin_header_token_and_json_type_and_never_throws", function()
	local seen
	local h = Http.new({ request = function(req) seen = req return { Success = true, StatusCode = 200, Body = "x" } end, token = "s3cret" })
	local r = h:send("POST", "http://127.0.0.1:1/result", "{}")
	eq(r.ok, true)
	eq(seen.Headers["X-Runbox-Plugin"], "1")
	eq(seen.Headers["Authorization"], "Bearer s3cret")
	eq(seen.Headers["Content-Type"], "application/json")
	r = h:send("GET", "http://127.0.0.1:1/poll", nil)
	eq(seen.Body, nil, "GET carries no body")
	eq(seen.Headers["Content-Type"], nil, "GET has no content type")
	local h2 = Http.new({ request = function() error("HttpError: ConnectFail", 0) end })
	r = h2:send("GET", "http://127.0.0.1:1/poll")
	eq(r.ok, false)
	eq(r.kind, "connect")
	local h3 = Http.new({ request = function() return { Success = false, StatusCode = 503, StatusMessage = "busy", Body = "" } end })
	r = h3:send("GET", "http://127.0.0.1:1/poll")
	eq(r.kind, "status")
	eq(r.status, 503)
end)

test("http_budget_waits_instead_of_exceeding_the_per_minute_limit", function()
	local sched = X.scheduler()
	local times = {}
	local h = Http.new({
		request = function()
			table.insert(times, sched.clock())
			return { Success = true, StatusCode = 200, Body = "" }
		end,
		clock = sched.clock,
		wait = sched.wait,
		pcall = X.ypcall,
		limit = 3,
	})
	sched.spawn(function()
		for _ = 1, 5 do
			h:send("GET", "http://h/poll")
		end
	end)
	sched.run(200)
	eq(#times, 5)
	eq(times[3], 0)
	ok(times[4] >= 60, "4th request waits for the window: " .. times[4])
	ok(times[5] >= 60, "5th too")
	eq(Http.encode("a b&c/é"), "a%20b%26c%2F%C3%A9")
end)

---------------------------------------------------------------------------------------------
-- Bridge

test("bridge_backoff_doubles_to_a_cap_and_waits_longest_for_user_fixes", function()
	local cfg = { initial = 1, factor = 2, max = 30 }
	local want = { 1, 2, 4, 8, 16, 30, 30 }
	for i, w in ipairs(want) do
		eq(Bridge.backoffDelay(i, "connect", cfg), w, "failure " .. i)
	end
	eq(Bridge.backoffDelay(1, "http_disabled", cfg), 30)
	-- F19: right after the user clicks Allow in Studio's prompt the plugin connects within
	-- seconds, not after the long wait; past three tries it waits the long wait.
	eq(Bridge.backoffDelay(1, "permission", cfg), 2)
	eq(Bridge.backoffDelay(2, "permission", cfg), 4)
	eq(Bridge.backoffDelay(3, "permission", cfg), 8)
	eq(Bridge.backoffDelay(4, "permission", cfg), 30)
	eq(Bridge.backoffDelay(1, "rate_limit", cfg), 30)
	-- Too many requests in flight is not the per-minute budget: a short pause.
	eq(Http.classify("HttpError: TooManyOutstandingRequests"), "busy")
	eq(Bridge.backoffDelay(6, "busy", cfg), 2)
	local jit = Bridge.backoffDelay(1, "connect", { initial = 1, factor = 2, max = 30, jitter = 0.2 }, function() return 0.5 end)
	ok(math.abs(jit - 1.1) < 1e-9, "jitter adds up to 20%: " .. jit)
end)

local function newBridge(sched, daemon, tools, extra)
	extra = extra or {}
	local states = {}
	local http = Http.new({ request = daemon.request, pcall = X.ypcall, clock = sched.clock, wait = sched.wait })
	local b = Bridge.new({
		http = http,
		json = JSON,
		url = "http://127.0.0.1:7766/",
		instanceId = "{inst-1}",
		identity = function() return { role = "edit", placeId = 99, placeName = "My Place" } end,
		executorFactory = function(deliver)
			return Executor.new({ tools = tools, deliver = deliver, spawn = sched.spawn, pcall = X.ypcall,
				history = extra.history, finishOps = X.Enum.FinishRecordingOperation })
		end,
		spawn = sched.spawn,
		wait = sched.wait,
		random = function() return 0 end,
		backoff = { initial = 1, factor = 2, max = 30, jitter = 0 },
		onState = function(s, detail) table.insert(states, { s, detail, sched.clock() }) end,
	})
	return b, states, http
end

test("bridge_polls_with_identity_runs_commands_and_posts_results", function()
	local sched = X.scheduler()
	local d = fakeDaemon(sched)
	local log = {}
	local b = newBridge(sched, d, toolset(sched, log))
	b:start()
	table.insert(d.queue, { id = "c1", tool = "read_a", args = { x = 5 } })
	sched.run(3)
	eq(#d.results, 1)
	eq(d.results[1].id, "c1")
	eq(d.results[1].ok, true)
	eq(d.results[1].result.x, 5)
	ok(string.find(d.polls[1], "instance=%7Binst-1%7D", 1, true), "instance id in poll: " .. d.polls[1])
	ok(string.find(d.polls[1], "role=edit", 1, true), "role in poll")
	ok(string.find(d.polls[1], "place=99", 1, true), "place in poll")
	ok(string.find(d.polls[1], "name=My%20Place", 1, true), "name in poll")
	eq(b.state, "connected")
	b:stop("test over")
	sched.run(40)
end)

test("bridge_idle_makes_about_four_requests_a_minute", function()
	local sched = X.scheduler()
	local d = fakeDaemon(sched)
	local b = newBridge(sched, d, toolset(sched, {}))
	b:start()
	sched.run(60)
	ok(#d.requests <= 5, "idle requests per minute: " .. #d.requests)
	b:stop()
	sched.run(80)
end)

test("bridge_backs_off_on_connect_errors_then_recovers", function()
	local sched = X.scheduler()
	local d = fakeDaemon(sched)
	d.fail = "HttpError: ConnectFail"
	local b, states = newBridge(sched, d, toolset(sched, {}))
	b:start()
	sched.run(6.5) -- failures at t=0, 1, 3 (delays 1, 2, 4)
	eq(#d.requests, 3, "three attempts in 6.5 s")
	eq(b.state, "retrying")
	ok(string.find(b.detail, "Nothing answers", 1, true), "connect advice shown: " .. tostring(b.detail))
	d.fail = nil
	sched.run(8) -- 4th attempt at t=7 succeeds
	eq(b.state, "connected")
	eq(b.failures, 0)
	b:stop()
	sched.run(30)
end)

test("bridge_shows_what_to_do_when_http_is_disabled_or_refused", function()
	local sched = X.scheduler()
	local d = fakeDaemon(sched)
	d.fail = "Http requests are not enabled. Enable via game settings"
	local b = newBridge(sched, d, toolset(sched, {}))
	b:start()
	sched.run(1)
	eq(b.state, "blocked")
	ok(string.find(b.detail, "Allow HTTP Requests", 1, true), "advice: " .. tostring(b.detail))
	eq(b.lastDelay, 30, "waits the longest before trying again")
	d.fail = "HTTP 403 (permission denied by the user)"
	sched.run(31)
	eq(b.state, "blocked")
	ok(string.find(b.detail, "Manage Plugins", 1, true), "advice: " .. tostring(b.detail))
	d.fail = nil
	d.status = 401
	d.statusBody = '{"ok":false,"error":"missing or wrong token"}'
	sched.run(62)
	ok(string.find(b.detail, "token", 1, true), "401 advice: " .. tostring(b.detail))
	ok(string.find(b.detail, "missing or wrong token", 1, true), "daemon's own message shown")
	b:stop()
end)

test("bridge_stop_posts_disconnect_and_ignores_a_late_command", function()
	local sched = X.scheduler()
	local d = fakeDaemon(sched)
	local log = {}
	local b = newBridge(sched, d, toolset(sched, log))
	b:start()
	sched.run(2)
	b:stop("user clicked Disconnect")
	eq(#d.disconnects, 1)
	eq(d.disconnects[1].instance, "{inst-1}")
	table.insert(d.queue, { id = "late", tool = "write_a" })
	sched.run(30)
	eq(#log, 0, "a command handed to the poll that was open at Disconnect is not run")
	local polls = #d.polls
	sched.run(90)
	eq(#d.polls, polls, "no polling after stop")
	eq(b.state, "disconnected")
end)

test("bridge_turns_unencodable_or_huge_results_into_errors", function()
	local sched = X.scheduler()
	local d = fakeDaemon(sched)
	local tools = {
		get = function(name)
			if name == "bad" then
				return { readOnly = true, run = function() return { f = function() end } end }
			end
			return { readOnly = true, run = function() return string.rep("x", Bridge.MAX_RESULT_BYTES + 1) end }
		end,
	}
	local b = newBridge(sched, d, tools)
	b:start()
	table.insert(d.queue, { id = "b1", tool = "bad" })
	table.insert(d.queue, { id = "b2", tool = "huge" })
	sched.run(3)
	eq(#d.results, 2)
	eq(d.results[1].ok, false)
	ok(string.find(d.results[1].error, "encode", 1, true), d.results[1].error)
	eq(d.results[2].ok, false)
	ok(string.find(d.results[2].error, "limit", 1, true), d.results[2].error)
	b:stop()
end)

---------------------------------------------------------------------------------------------
-- Executor

local function newExecutor(sched, log, history)
	local answers = {}
	local ex = Executor.new({
		tools = toolset(sched, log),
		deliver = function(a) table.insert(answers, a) end,
		spawn = sched.spawn,
		pcall = X.ypcall,
		history = history,
		finishOps = X.Enum.FinishRecordingOperation,
	})
	return ex, answers
end

test("executor_runs_reads_concurrently_and_writes_one_at_a_time_in_order", function()
	local sched = X.scheduler()
	local log = {}
	local ex, answers = newExecutor(sched, log, X.history())
	ex:submit({ id = "w1", tool = "write_a", args = {} })
	ex:submit({ id = "r1", tool = "read_a", args = {} })
	ex:submit({ id = "w2", tool = "write_b", args = {} })
	ex:submit({ id = "r2", tool = "read_b", args = {} })
	sched.run(10)
	eq(#answers, 4)
	local function at(entry)
		for _, l in ipairs(log) do
			if l == entry then
				return true
			end
		end
		return false
	end
	ok(at("start read_a 0") and at("start read_b 0"), "reads start together: " .. table.concat(log, ", "))
	ok(at("start write_a 0") and at("end write_a 1"), "first write at 0..1")
	ok(at("start write_b 1") and at("end write_b 2"), "second write waits for the first: " .. table.concat(log, ", "))
	eq(ex.inFlight, 0)
end)

test("executor_records_each_write_commits_on_success_and_cancels_on_failure", function()
	local sched = X.scheduler()
	local h = X.history()
	local ex, answers = newExecutor(sched, {}, h)
	ex:submit({ id = "w1", tool = "write_a", args = { x = 1 } })
	ex:submit({ id = "w2", tool = "write_b", args = { fail = "nope" } })
	ex:submit({ id = "r1", tool = "read_a", args = {} })
	ex:submit({ id = "u1", tool = "undo", args = {} })
	sched.run(10)
	eq(table.concat(h.log, "; "), "begin Runbox: write_a; Commit rec1; begin Runbox: write_b; Cancel rec2")
	local byId = {}
	for _, a in ipairs(answers) do
		byId[a.id] = a
	end
	eq(byId.w1.ok, true)
	eq(byId.w2.ok, false)
	eq(byId.w2.error, "it broke: nope", "the handler's message, unchanged")
	eq(byId.u1.ok, true, "undo runs unrecorded")
end)

test("executor_runs_writes_unrecorded_when_studio_refuses_a_recording", function()
	local sched = X.scheduler()
	local h = X.history()
	h.refuse = true -- a play test is running
	local ex, answers = newExecutor(sched, {}, h)
	ex:submit({ id = "w1", tool = "write_a", args = {} })
	sched.run(5)
	eq(answers[1].ok, true)
	eq(#h.log, 0)
end)

test("executor_deduplicates_command_ids", function()
	local sched = X.scheduler()
	local log = {}
	local ex, answers = newExecutor(sched, log, X.history())
	eq(ex:submit({ id = "c1", tool = "write_a", args = {} }), "write")
	eq(ex:submit({ id = "c1", tool = "write_a", args = {} }), "duplicate", "while running")
	sched.run(5)
	eq(#answers, 1)
	eq(ex:submit({ id = "c1", tool = "write_a", args = {} }), "duplicate", "after it finished")
	sched.run(10)
	eq(#answers, 2, "the cached answer is sent again")
	eq(answers[2], answers[1])
	local starts = 0
	for _, l in ipairs(log) do
		if string.find(l, "^start") then
			starts = starts + 1
		end
	end
	eq(starts, 1, "ran once")
end)

test("executor_answers_unknown_tools_and_lets_stop_play_run_during_start_play", function()
	local sched = X.scheduler()
	local log = {}
	local ex, answers = newExecutor(sched, log, X.history())
	ex:submit({ id = "x", tool = "no_such_tool", args = {} })
	ex:submit({ id = "p1", tool = "start_play", args = {} })
	ex:submit({ id = "p2", tool = "stop_play", args = {} })
	ex:submit({ id = "w", tool = "write_a", args = {} })
	sched.run(5)
	local byId = {}
	for _, a in ipairs(answers) do
		byId[a.id] = a
	end
	eq(byId.x.ok, false)
	ok(string.find(byId.x.error, "no_such_tool", 1, true), byId.x.error)
	ok(byId.p2 ~= nil, "stop_play answered while start_play still runs")
	ok(byId.w ~= nil, "writes are not blocked behind a play session")
	eq(byId.p1, nil)
	eq(Executor.modeOf("get_x", { readOnly = true }), "read")
	eq(Executor.modeOf("set_x", { readOnly = false }), "write")
	eq(Executor.modeOf("set_x", { readOnly = false, mode = "serial" }), "serial")
	eq(Executor.modeOf("set_x", { readOnly = false, recording = false }), "serial")
	eq(Executor.modeOf("run_server", { readOnly = false, recording = false }), "free")
end)

---------------------------------------------------------------------------------------------
-- Console

local function newConsole(sched, sendOk)
	local batches = {}
	local c = Console.new({
		send = function(entries)
			table.insert(batches, { at = sched.clock(), entries = entries })
			sched.wait(0.01)
			return sendOk == nil or sendOk()
		end,
		spawn = sched.spawn,
		wait = sched.wait,
		now = sched.clock,
		clock = sched.clock,
		maxBatch = 50,
		maxBuffer = 100,
	})
	return c, batches
end

test("console_batches_lines_once_a_second_and_sends_nothing_when_idle", function()
	local sched = X.scheduler()
	local c, batches = newConsole(sched)
	c:setEnabled(true)
	sched.run(30)
	eq(#batches, 0, "idle: no requests")
	c:push("log", "one")
	c:push("warn", "two")
	sched.run(31.5)
	c:push("error", "three")
	sched.run(40)
	eq(#batches, 2)
	eq(#batches[1].entries, 2)
	eq(batches[1].at, 31, "about a second after the first line")
	eq(batches[1].entries[2].level, "warn")
	eq(batches[2].entries[1].message, "three")
	c:push("log", Console.PREFIX .. " the plugin's own line")
	sched.run(50)
	eq(#batches, 2, "the plugin's own lines are not forwarded")
end)

test("console_sends_full_batches_at_once_and_caps_the_buffer", function()
	local sched = X.scheduler()
	local c, batches = newConsole(sched)
	c:setEnabled(true)
	sched.spawn(function()
		for i = 1, 120 do
			c:push("log", "line " .. i)
		end
	end)
	sched.run(0.5)
	ok(#batches >= 1 and #batches[1].entries == 50, "a full batch goes out before the second")
	sched.run(5)
	local total = 0
	for i, b in ipairs(batches) do
		total = total + #b.entries
		ok(#b.entries <= 50, "batch size")
		if i > 1 then
			ok(b.at - batches[i - 1].at >= 1, "at most one batch a second, even when full")
		end
	end
	eq(total, 120)
	eq(#batches, 3)
end)

test("console_holds_lines_while_disconnected_and_retries_failures", function()
	local sched = X.scheduler()
	local up = false
	local c, batches = newConsole(sched, function() return up end)
	c:push("log", "early")
	sched.run(10)
	eq(#batches, 0, "nothing sent while the bridge is not connected")
	c:setEnabled(true)
	sched.run(11.5)
	eq(#batches, 1, "sent once connected")
	sched.run(14)
	eq(#batches, 1, "a failed batch waits before it is retried")
	up = true
	sched.run(20)
	eq(#batches, 2)
	eq(batches[2].entries[1].message, "early")
	eq(Console.levelOf(X.Enum.MessageType.MessageWarning), "warn")
	eq(Console.levelOf(X.Enum.MessageType.MessageError), "error")
	eq(Console.levelOf(X.Enum.MessageType.MessageOutput), "log")
	for i = 1, 150 do
		c:push("log", "x" .. i)
	end
	eq(#c.buffer <= 100, true, "buffer capped")
end)

---------------------------------------------------------------------------------------------
-- Main (widget, settings, auto-connect, unload)

local function startMain(settings, role, tools, sched, gameOpts)
	sched = sched or X.scheduler()
	local d = fakeDaemon(sched)
	local plugin = X.fakePlugin(settings)
	gameOpts = gameOpts or {}
	gameOpts.role = role
	local env = X.env({ sched = sched, request = d.request, tools = tools or toolset(sched, {}), game = X.game(gameOpts) })
	local main = Main.start(plugin, env)
	return main, plugin, d, sched
end

test("main_builds_the_widget_and_connects_on_click", function()
	local main, plugin, d, sched = startMain({}, "edit")
	eq(#plugin.toolbars, 1)
	local button = plugin.toolbars[1].buttons[1]
	local widget = plugin.widgets.RunboxBridgeWidget
	ok(widget ~= nil, "dock widget created")
	eq(widget.Enabled, false)
	button.Click:Fire()
	eq(widget.Enabled, true, "toolbar button shows the widget")
	eq(main.bridge.running, false, "no auto-connect by default")
	eq(X.find(widget, "Url").Text, Main.DEFAULT_URL)
	X.find(widget, "Connect").MouseButton1Click:Fire()
	sched.run(1)
	eq(main.bridge.running, true)
	eq(main.bridge.state, "connected")
	eq(X.find(widget, "Connect").Text, "Disconnect")
	eq(plugin.settings.RunboxConnected, true)
	X.find(widget, "Connect").MouseButton1Click:Fire()
	eq(main.bridge.running, false)
	eq(#d.disconnects, 1)
	eq(plugin.settings.RunboxConnected, false)
end)

-- Audit F23: the toolbar button stays pressed exactly while the widget is open, also when the
-- widget is closed with its X; text and fields take Studio's theme colours and follow a change.
test("main_button_follows_the_widget_and_colours_follow_the_theme", function()
	local sched = X.scheduler()
	local d = fakeDaemon(sched)
	local plugin = X.fakePlugin({})
	local studio = X.studioSettings()
	local env = X.env({ sched = sched, request = d.request, tools = toolset(sched, {}),
		game = X.game({ role = "edit" }), studio = studio })
	Main.start(plugin, env)
	local button = plugin.toolbars[1].buttons[1]
	local widget = plugin.widgets.RunboxBridgeWidget
	button.Click:Fire()
	eq(button.active, true)
	widget.Enabled = false -- the user closes it with its X
	eq(button.active, false, "the button is released with the widget")
	widget.Enabled = true
	eq(button.active, true)
	local url = X.find(widget, "Url")
	same(url.TextColor3, { theme = "Dark", item = "MainText" })
	same(url.BackgroundColor3, { theme = "Dark", item = "InputFieldBackground" })
	same(X.find(widget, "Connect").BackgroundColor3, { theme = "Dark", item = "Button" })
	same(X.find(widget, "Label3").TextColor3, { theme = "Dark", item = "MainText" })
	X.setTheme(studio, "Light")
	same(url.TextColor3, { theme = "Light", item = "MainText" }, "a theme change re-colours")
	same(X.find(widget, "Connect").TextColor3, { theme = "Light", item = "ButtonText" })
end)

test("main_falls_back_to_CreateDockWidgetPluginGui_on_older_studios", function()
	local sched = X.scheduler()
	local d = fakeDaemon(sched)
	local plugin = X.fakePlugin({})
	local create = plugin.CreateDockWidgetPluginGuiAsync
	plugin.CreateDockWidgetPluginGuiAsync = nil -- an older Studio: the member does not exist
	plugin.CreateDockWidgetPluginGui = create
	local env = X.env({ sched = sched, request = d.request, tools = toolset(sched, {}), game = X.game() })
	local main = Main.start(plugin, env)
	ok(plugin.widgets.RunboxBridgeWidget ~= nil, "widget made the old way")
	eq(main.ui.widget, plugin.widgets.RunboxBridgeWidget)
end)

test("main_keeps_running_without_a_widget_when_creating_it_fails (F23)", function()
	-- The method exists but fails (the widget id is still taken after a reload): the
	-- deprecated fallback would fail too; the plugin goes on, and still connects.
	local sched = X.scheduler()
	local d = fakeDaemon(sched)
	local plugin = X.fakePlugin({ RunboxAutoConnect = true })
	plugin.CreateDockWidgetPluginGuiAsync = function()
		error("A widget with id RunboxBridgeWidget already exists", 2)
	end
	plugin.CreateDockWidgetPluginGui = function()
		error("deprecated fallback must not be called", 2)
	end
	local env = X.env({ sched = sched, request = d.request, tools = toolset(sched, {}), game = X.game() })
	local main = Main.start(plugin, env)
	sched.run(1)
	eq(main.bridge.state, "connected")
end)

test("main_persists_url_token_and_auto_connect", function()
	local main, plugin, d, sched = startMain({}, "edit")
	local widget = plugin.widgets.RunboxBridgeWidget
	local url = X.find(widget, "Url")
	url.Text = "  http://localhost:9999  "
	url.FocusLost:Fire(true)
	eq(plugin.settings.RunboxUrl, "http://localhost:9999")
	local token = X.find(widget, "Token")
	token.Text = "tok"
	token.FocusLost:Fire(true)
	eq(plugin.settings.RunboxToken, "tok")
	X.find(widget, "AutoConnect").MouseButton1Click:Fire()
	eq(plugin.settings.RunboxAutoConnect, true)
	-- A new session with those settings connects by itself, to the saved URL, with the token.
	local main2, plugin2, d2, sched2 = startMain(plugin.settings, "edit")
	sched2.run(1)
	eq(main2.bridge.running, true)
	ok(string.find(d2.requests[1].Url, "http://localhost:9999/health", 1, true) == 1, d2.requests[1].Url)
	ok(string.find(d2.requests[2].Url, "http://localhost:9999/poll?", 1, true) == 1, d2.requests[2].Url)
	eq(d2.requests[1].Headers.Authorization, "Bearer tok")
end)

test("main_disconnects_on_unload_and_play_copies_follow_the_edit_copy", function()
	local main, plugin, d, sched = startMain({ RunboxAutoConnect = true }, "edit")
	sched.run(2)
	eq(main.bridge.state, "connected")
	plugin.Unloading:Fire()
	eq(#d.disconnects, 1, "POST /disconnect on unload")
	ok(string.find(d.disconnects[1].instance, "^{"), "with the instance id")
	eq(main.bridge.running, false)
	-- Play-mode copies: no widget; they connect with their role when the edit copy is connected.
	local savedTask = _G.task
	local server, splugin, sd, ssched
	local okServer, errServer = pcall(function()
		local sched = X.scheduler()
		_G.task = { spawn = sched.spawn, wait = sched.wait } -- PlayStop uses Roblox's task
		server, splugin, sd, ssched = startMain({ RunboxConnected = true }, "server", nil, sched)
		ssched.run(1)
		-- F6: a request written before this test started (an old one, persisted) is ignored;
		-- one for another Runbox test (a nonce) is ignored; a fresh one ends the test.
		splugin.settings.RunboxStopPlayRequest = { token = "old", at = os.time() - 3600 }
		ssched.run(3)
		eq(#server.env.game:GetService("StudioTestService").ended, 0, "an old request is ignored")
		splugin.settings.RunboxStopPlayRequest = { token = "other", nonce = "n-2", at = os.time() }
		ssched.run(6)
		eq(#server.env.game:GetService("StudioTestService").ended, 0, "another test's request is ignored")
		splugin.settings.RunboxStopPlayRequest = { token = "token-1", at = os.time() }
		ssched.run(9)
		eq(#server.env.game:GetService("StudioTestService").ended, 1, "the server copy ended the test")
	end)
	_G.task = savedTask
	if not okServer then
		error(errServer, 0)
	end
	eq(next(splugin.widgets), nil, "no widget in a play DataModel")
	eq(server.bridge.running, true)
	eq(server.http.limit, Main.PLAY_LIMIT, "play copies get a smaller request budget")
	eq(main.http.limit, Http.DEFAULT_LIMIT)
	ok(string.find(sd.polls[1], "role=server", 1, true), sd.polls[1])
	-- F18: client copies never poll, whatever the flag says.
	local client = startMain({ RunboxConnected = true }, "client")
	eq(client.bridge.running, false)
	-- F6(d): an edit window without auto-connect leaves the shared flag alone.
	local shared = { RunboxConnected = true }
	startMain(shared, "edit")
	eq(shared.RunboxConnected, true)
end)

test("main_role_comes_from_IsEdit_so_a_paused_test_server_is_a_server", function()
	-- F5: in a paused test IsRunning() is false too; the copy is still the test's server.
	local game = X.game({ role = "server", paused = true })
	eq(Main.roleOf(game:GetService("RunService")), "server")
	eq(Main.roleOf(X.game({ role = "edit" }):GetService("RunService")), "edit")
	eq(Main.roleOf(X.game({ role = "client", paused = true }):GetService("RunService")), "client")
end)

test("main_server_copy_of_a_runbox_test_reports_its_edit_window_and_connects", function()
	-- F16: the test arguments name the edit window; the poll carries it as parent=, and the
	-- server copy connects although no flag says so.
	local server, _, sd, ssched = startMain({}, "server", nil, nil,
		{ testArgs = { runbox = { nonce = "n-1", parent = "{edit-1}" } } })
	ssched.run(1)
	eq(server.bridge.running, true)
	ok(string.find(sd.polls[1], "parent=%7Bedit-1%7D", 1, true), sd.polls[1])
end)

test("main_refuses_settings_that_would_corrupt_studio_settings", function()
	-- F17: a backslash or a quote in a saved value can corrupt Studio's settings file.
	eq(Main.badSettingValue("http://127.0.0.1:7766"), nil)
	ok(Main.badSettingValue("tok\\en"), "backslash refused")
	ok(Main.badSettingValue("a\"b"), "quote refused")
end)

test("main_forwards_studio_output_while_connected", function()
	local main, plugin, d, sched = startMain({ RunboxAutoConnect = true }, "edit")
	sched.run(1)
	main.env.game:GetService("LogService").MessageOut:Fire("hello from a script", X.Enum.MessageType.MessageWarning)
	sched.run(3)
	eq(#d.consoles, 1)
	eq(d.consoles[1].instance, main.instanceId)
	eq(d.consoles[1].entries[1].message, "hello from a script")
	eq(d.consoles[1].entries[1].level, "warn")
	main.disconnect()
end)

---------------------------------------------------------------------------------------------
-- The bundle

test("bundle_is_deterministic_loads_under_lua51_and_exposes_every_module", function()
	local a = Build.bundle(SRC)
	local b = Build.bundle(SRC)
	eq(a == b, true, "two builds are byte-identical")
	ok(not string.find(a, "/work/", 1, true), "no absolute paths in the bundle")
	local chunk = assert(loadstring(a, "=RunboxBridge.lua"))
	-- The bundle loads in the fake Roblox environment (S2's tests/fake), as in Studio.
	local Fake = require("fake")
	Fake.newPlace()
	_G.plugin = nil
	local api = chunk()
	for _, name in ipairs(Build.list(SRC)) do
		if name ~= "init.server" then
			local m = api.require(api.root[name] or name)
			ok(m ~= nil, "module " .. name)
		end
	end
	eq(api.require(api.root.Bridge).backoffDelay(3, "connect", { initial = 1, factor = 2, max = 30 }), 4)
	eq(api.root.Main.Parent, api.root)
	eq(api.root:FindFirstChild("Nope"), nil)
end)

test("bundle_runs_in_the_fake_studio_with_its_studio_env_and_serves_commands", function()
	-- The whole plugin as Studio runs it: the bundle's entry script with a `plugin` global,
	-- Main.studioEnv (HttpService:RequestAsync, task, JSONEncode, ...), the real tool handlers,
	-- over the fake DataModel. Globals Studio has and the fake lacks are supplied here.
	local Fake = require("fake")
	local place = Fake.newPlace()
	local L = Fake.L
	local saved = { Instance = _G.Instance, Enum = _G.Enum, DockWidgetPluginGuiInfo = _G.DockWidgetPluginGuiInfo,
		DateTime = _G.DateTime, pcall = _G.pcall }
	-- Roblox's pcall takes C functions too; the fake's yield-safe pcall (coroutine-based) cannot,
	-- and the fake HttpService:JSONDecode pcalls cjson.decode. Route C functions to the plain one.
	_G.pcall = X.cSafe(saved.pcall)
	local ui = { Frame = true, TextLabel = true, TextBox = true, TextButton = true, UIListLayout = true, UIPadding = true }
	_G.Instance = {
		new = function(className)
			if ui[className] then
				return X.uiInstance(className)
			end
			return saved.Instance.new(className)
		end,
	}
	_G.Enum = setmetatable({}, {
		__index = function(_, k)
			local okE, e = pcall(function() return saved.Enum[k] end)
			if okE and e ~= nil and not X.Enum[k] then
				return e
			end
			if k == "FinishRecordingOperation" or k == "MessageType" then
				return e
			end
			return X.Enum[k]
		end,
	})
	_G.DockWidgetPluginGuiInfo = { new = function(state, enabled) return { InitialEnabled = enabled } end }
	_G.DateTime = { now = function() return { UnixTimestampMillis = 1700000000000 } end }
	local d = fakeDaemon({ wait = _G.task.wait })
	d.window = 1
	Fake.state[place.game:GetService("HttpService")].requestHandler = d.request
	local plugin = X.fakePlugin({ RunboxAutoConnect = true })
	_G.plugin = plugin
	local okRun, err = pcall(function()
		local api = assert(loadstring(Build.bundle(SRC), "=RunboxBridge.lua"))()
		table.insert(d.queue, { id = "s1", tool = "get_selection", args = {} })
		table.insert(d.queue, { id = "s2", tool = "create_object", args = { class_name = "Part", parent = "Workspace", name = "FromStudio" } })
		L.runUntilIdle(10, function() return #d.results >= 2 end)
		eq(#d.results, 2, "answers posted")
		eq(d.results[1].ok, true, "get_selection: " .. tostring(d.results[1].error))
		eq(d.results[2].ok, true, "create_object: " .. tostring(d.results[2].error))
		ok(place.game.Workspace:FindFirstChild("FromStudio") ~= nil, "the part exists in the place")
		local log = Fake.state[place.game:GetService("ChangeHistoryService")].log
		eq(#log, 2, "one recording for the write")
		eq(log[2].operation.Name, "Commit")
		ok(string.find(d.requests[1].Url, "http://127.0.0.1:7766/", 1, true) == 1, "default URL")
		eq(d.requests[1].Headers["X-Runbox-Plugin"], "1")
		plugin.Unloading:Fire()
		eq(#d.disconnects, 1, "unloading disconnects")
		ok(api.require ~= nil)
	end)
	for k, v in pairs(saved) do
		_G[k] = v
	end
	_G.plugin = nil
	if not okRun then
		error(err, 0)
	end
end)

