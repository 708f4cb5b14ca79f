-- tools/Playtest.lua - play tests through StudioTestService.
--
-- StudioTestService:ExecutePlayModeAsync / ExecuteRunModeAsync start a session and yield until
-- it ends; StudioTestService:EndTest(value) ends it, but only when called from the server
-- DataModel of the test (it errors elsewhere). There is no "Stop" method. So:
--   start_play / run_server  start the session in a new thread and answer at once.
--   stop_play                in the play server (or run mode) DataModel: EndTest, then
--                            RunService:Stop() for run mode. In the edit DataModel: writes the
--                            plugin setting STOP_SETTING (a fresh token); the plugin copy that
--                            runs in the play server watches it (PlayStop.watch) and calls
--                            EndTest. The daemon may also route stop_play straight to a
--                            connected server instance.
--   run_script_in_play_mode  adds a temporary Script to ServerScriptService that runs the code
--                            in the server, collects its output and calls EndTest with the
--                            result; times out after `timeout` seconds; the Script is removed
--                            afterwards. The code is compiled in the plugin first, so a syntax
--                            error fails at once instead of hanging the test. Sent to the
--                            plugin copy in a running play server (the daemon routes it there
--                            while a test runs), it runs the code right there instead.
-- None of these run inside a ChangeHistoryService recording (recording = false).

local Values = require(script.Parent.Parent.Values)
local U = require(script.Parent.Util)
local PlayStop = require(script.Parent.PlayStop)

local RUNNER_NAME = "RunboxPlayRunner"

-- What this plugin started (the edit copy): {running, kind, startedAt, last}.
local session = { running = false }

local function studioMode(ctx)
	local run = U.svc(ctx, "RunService")
	if not run:IsRunning() then
		return "edit"
	end
	if run:IsRunMode() then
		return "run"
	end
	if run:IsServer() then
		return "play_server"
	end
	return "play_client"
end

local function startSession(ctx, kind)
	if studioMode(ctx) ~= "edit" then
		error("a test is already running here (mode " .. studioMode(ctx) .. "); stop_play first", 0)
	end
	if session.running then
		error("a " .. session.kind .. " test started by Runbox is still running; stop_play first", 0)
	end
	local sts = U.svc(ctx, "StudioTestService")
	session.running = true
	session.kind = kind
	session.last = nil
	task.spawn(function()
		local ok, res = pcall(function()
			if kind == "run_server" then
				return sts:ExecuteRunModeAsync({})
			end
			return sts:ExecutePlayModeAsync({})
		end)
		session.running = false
		session.last = { ok = ok, result = ok and Values.encode(res) or tostring(res) }
	end)
	if not session.running and session.last and not session.last.ok then
		error("could not start the test: " .. tostring(session.last.result), 0)
	end
	return { started = kind, note = "the test runs until stop_play; check with get_studio_mode" }
end

-- The Luau source of the temporary server Script (the user's code becomes a function body).
local function runnerSource(code, timeout)
	return table.concat({
		"local STS = game:GetService(\"StudioTestService\")",
		"local LogService = game:GetService(\"LogService\")",
		"local HttpService = game:GetService(\"HttpService\")",
		"local logs, started, finished = {}, os.clock(), false",
		"local conn = LogService.MessageOut:Connect(function(message, kind)",
		"\tif #logs < 500 then",
		"\t\tlocal level = \"info\"",
		"\t\tif kind == Enum.MessageType.MessageWarning then level = \"warn\"",
		"\t\telseif kind == Enum.MessageType.MessageError then level = \"error\" end",
		"\t\ttable.insert(logs, { level = level, message = message })",
		"\tend",
		"end)",
		"local function finish(result)",
		"\tif finished then return end",
		"\tfinished = true",
		"\tconn:Disconnect()",
		"\tresult.logs = logs",
		"\tresult.duration = os.clock() - started",
		"\tSTS:EndTest(result)",
		"end",
		"task.delay(" .. string.format("%d", timeout) .. ", function()",
		"\tfinish({ success = false, isTimeout = true, error = \"timed out after " .. timeout .. " s\" })",
		"end)",
		"task.spawn(function()",
		"\tlocal ok, value = pcall(function()",
		code,
		"\tend)",
		"\tif ok then",
		"\t\tif type(value) == \"table\" then",
		"\t\t\tlocal okJ, text = pcall(function() return HttpService:JSONEncode(value) end)",
		"\t\t\tvalue = okJ and text or tostring(value)",
		"\t\telseif value ~= nil then",
		"\t\t\tvalue = tostring(value)",
		"\t\tend",
		"\t\tfinish({ success = true, value = value })",
		"\telse",
		"\t\tfinish({ success = false, error = tostring(value) })",
		"\tend",
		"end)",
	}, "\n")
end

-- Runs compiled code in this (play server) DataModel with print/warn captured, waiting up to
-- timeout seconds; the same answer shape as a run through a fresh test.
local function runHere(ctx, fn, timeout)
	local logs = {}
	local function capture(level)
		return function(...)
			local parts = {}
			for i = 1, select("#", ...) do
				parts[i] = tostring((select(i, ...)))
			end
			if #logs < 500 then
				table.insert(logs, { level = level, message = table.concat(parts, " ") })
			end
		end
	end
	local base = ctx.env or getfenv(0)
	setfenv(fn, setmetatable({ print = capture("info"), warn = capture("warn"), game = ctx.game,
		workspace = ctx.game:GetService("Workspace") }, { __index = base }))
	local result = nil
	local started = os.clock()
	task.spawn(function()
		local ok, value = pcall(fn)
		if ok then
			if type(value) == "table" then
				local okJ, text = pcall(function()
					return U.svc(ctx, "HttpService"):JSONEncode(value)
				end)
				value = okJ and text or tostring(value)
			elseif value ~= nil then
				value = tostring(value)
			end
			result = { success = true, value = value }
		else
			result = { success = false, error = tostring(value) }
		end
	end)
	local waited = 0
	while result == nil and waited < timeout do
		task.wait(0.1)
		waited = waited + 0.1
	end
	if result == nil then
		result = { success = false, isTimeout = true, error = "timed out after " .. timeout .. " s (the code keeps running)" }
	end
	result.isTimeout = result.isTimeout == true
	result.logs = logs
	result.duration = os.clock() - started
	result.ranIn = "play_server"
	return result
end

local T = {}

T.start_play = {
	readOnly = false,
	recording = false,
	run = function(args, ctx)
		return startSession(ctx, "start_play")
	end,
}

T.run_server = {
	readOnly = false,
	recording = false,
	run = function(args, ctx)
		return startSession(ctx, "run_server")
	end,
}

T.stop_play = {
	readOnly = false,
	recording = false,
	run = function(args, ctx)
		local mode = studioMode(ctx)
		local sts = U.svc(ctx, "StudioTestService")
		if mode == "play_server" or mode == "run" then
			local ok, err = pcall(function()
				sts:EndTest({ stoppedBy = "stop_play" })
			end)
			if mode == "run" then
				U.svc(ctx, "RunService"):Stop()
				return { stopped = true, mode = mode }
			end
			if not ok then
				error("could not end the test: " .. tostring(err), 0)
			end
			return { stopped = true, mode = mode }
		elseif mode == "play_client" then
			error("stop_play cannot run in a play-test client; it runs in the edit or server DataModel", 0)
		end
		if not ctx.plugin then
			error("no play test can be stopped from here (no plugin settings to signal the test server)", 0)
		end
		local token = PlayStop.request(ctx.plugin, U.svc(ctx, "HttpService"))
		return {
			requested = true,
			token = token,
			startedByRunbox = session.running,
			note = "the test server ends the test when it sees the request (about a second);"
				.. " check with get_studio_mode",
		}
	end,
}

T.get_studio_mode = {
	readOnly = true,
	run = function(args, ctx)
		local mode = studioMode(ctx)
		local out = { mode = mode, testRunning = session.running or mode ~= "edit" }
		if session.running then
			out.test = session.kind
		end
		if session.last then
			out.lastTest = session.last
		end
		return out
	end,
}

T.run_script_in_play_mode = {
	readOnly = false,
	recording = false,
	run = function(args, ctx)
		local code = U.str(args, "code")
		local timeout = U.int(args, "timeout", 60, 1, 90)
		local mode = args.mode or "start_play"
		if mode ~= "start_play" and mode ~= "run_server" then
			error("mode must be \"start_play\" or \"run_server\"", 0)
		end
		local fn, cerr = loadstring(code, "=run_script_in_play_mode")
		if not fn then
			error("compile error: " .. tostring(cerr) .. " (the test was not started)", 0)
		end
		if studioMode(ctx) == "play_server" then
			-- the daemon routes this tool here while a test runs: run the code in this server
			return runHere(ctx, fn, timeout)
		end
		if studioMode(ctx) ~= "edit" or session.running then
			error("a test is already running; stop_play first", 0)
		end
		local sss = U.svc(ctx, "ServerScriptService")
		local old = sss:FindFirstChild(RUNNER_NAME)
		if old then
			old:Destroy()
		end
		local runner = Instance.new("Script")
		runner.Name = RUNNER_NAME
		runner.Source = runnerSource(code, timeout)
		runner.Parent = sss
		local sts = U.svc(ctx, "StudioTestService")
		session.running = true
		session.kind = mode
		local ok, res = pcall(function()
			if mode == "run_server" then
				return sts:ExecuteRunModeAsync({})
			end
			return sts:ExecutePlayModeAsync({})
		end)
		session.running = false
		pcall(function()
			runner:Destroy()
		end)
		if not ok then
			error("the play test failed to run: " .. tostring(res), 0)
		end
		if type(res) ~= "table" then
			return { success = false, error = "the test ended without a result (stopped by hand?)",
				value = Values.encode(res) }
		end
		return {
			success = res.success == true,
			value = res.value,
			error = res.error,
			isTimeout = res.isTimeout == true,
			logs = res.logs or {},
			duration = res.duration,
		}
	end,
}

return T
