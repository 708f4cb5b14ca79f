-- tools/Playtest.lua - play tests through StudioTestService.
--
-- StudioTestService:ExecutePlayModeAsync / ExecuteRunModeAsync start a session (the engine
-- copies the place into a new server DataModel) and yield until it ends; EndTest(value) ends it
-- from that server DataModel, returns at once and ends the session a moment later, also for a
-- test the user started by hand (StudioTestService.yaml). So:
--   start_play / run_server  start the session in a new thread with test arguments
--                            {runbox = {nonce, parent, deadline?}} (the server copy reads them
--                            with GetTestArgs: who started the test, for which window), then
--                            wait up to START_WAIT seconds for a start that fails after
--                            yielding ("Previous call to start play session has not been
--                            completed") and report it. restart = true ends a running test
--                            first; before = Luau runs in the edit DataModel before the start.
--   stop_play                in the test server: answers first and calls EndTest a moment
--                            later (the server DataModel is torn down by it, and this plugin
--                            copy with it), in Play and Run mode alike (never RunService:Stop,
--                            which keeps the simulation's changes). In the edit DataModel: an
--                            addressed stop request through the shared plugin settings
--                            (PlayStop), which the server copy of that test honours. The daemon
--                            sends stop_play straight to a connected test server when it can.
--   run_script_in_play_mode  adds a temporary Script to ServerScriptService whose first lines
--                            are the user's code as a vararg function (so `...` and assignments
--                            to "globals" cannot reach the runner's locals), then the runner,
--                            which runs only in the test Runbox started (its nonce) and calls
--                            EndTest with the result; times out after `timeout` seconds, and
--                            the edit copy asks for a stop itself if the test outlives that by
--                            WATCHDOG_MARGIN. The exact wrapper is compiled first, so a syntax
--                            error fails at once instead of hanging the test. Sent to the copy
--                            in a running test server, it runs the code right there.
-- Modes: a DataModel is "edit" only while RunService:IsEdit(); a test that is neither IsEdit nor
-- IsRunning is paused (RunService.yaml), and its role comes from IsServer.
-- None of these run inside a ChangeHistoryService recording (recording = false).

local Values = require(script.Parent.Parent.Values)
local Globals = require(script.Parent.Parent.Globals)
local U = require(script.Parent.Util)
local PlayStop = require(script.Parent.PlayStop)
local PlayRunner = require(script.Parent.PlayRunner)

local RUNNER_NAME = "RunboxPlayRunner"
local START_WAIT = 0.5 -- seconds to wait for a start that fails after yielding
local WATCHDOG_MARGIN = 20 -- seconds past the timeout before the edit copy stops the test
local RESTART_WAIT = 10 -- seconds restart waits for the old test to end

-- What this plugin copy started (the edit copy): {running, kind, nonce, startedAt, last}.
local session = { running = false }

local P = {}

function P.mode(ctx)
	return PlayStop.mode(U.svc(ctx, "RunService"))
end

local function testArgs(ctx)
	return PlayStop.testArgs(U.svc(ctx, "StudioTestService"))
end

-- Runs `before` (Luau) in the edit DataModel; raises with the reason when it fails.
local function runBefore(ctx, code)
	local fn, cerr = loadstring(code, "=before")
	if not fn then
		error("before does not compile: " .. tostring(cerr) .. " (the test was not started)", 0)
	end
	local fields = { game = ctx.game, workspace = ctx.game:GetService("Workspace"), plugin = ctx.plugin }
	setfenv(fn, ctx.env and setmetatable(fields, { __index = ctx.env }) or Globals.env(fields))
	local ok, err = pcall(fn)
	if not ok then
		error("before failed: " .. tostring(err) .. " (the test was not started)", 0)
	end
end

-- Ends the test Runbox started (restart) and waits until it is over.
local function endRunning(ctx)
	if not session.running then
		return
	end
	if ctx.plugin then
		PlayStop.request(ctx.plugin, U.svc(ctx, "HttpService"), session.nonce, ctx.instanceId)
	end
	local waited = 0
	while session.running and waited < RESTART_WAIT do
		task.wait(0.1)
		waited = waited + 0.1
	end
	if session.running then
		error("the running test did not end within " .. RESTART_WAIT .. " s; stop it in Studio and retry", 0)
	end
end

-- Starts a session in a new thread; returns its nonce. extra: fields for the test arguments.
local function launch(ctx, kind, extra)
	local sts = U.svc(ctx, "StudioTestService")
	local nonce = U.svc(ctx, "HttpService"):GenerateGUID(false)
	local info = { nonce = nonce, parent = ctx.instanceId, kind = kind }
	for k, v in pairs(extra or {}) do
		info[k] = v
	end
	session.running = true
	session.kind = kind
	session.nonce = nonce
	session.startedAt = os.time()
	session.last = nil
	task.spawn(function()
		local ok, res = pcall(function()
			if kind == "run_server" then
				return sts:ExecuteRunModeAsync({ runbox = info })
			end
			return sts:ExecutePlayModeAsync({ runbox = info })
		end)
		if session.nonce == nonce then
			session.running = false
			session.last = { ok = ok, result = ok and Values.encode(res) or tostring(res) }
		end
	end)
	return nonce
end

local function startSession(args, ctx, kind)
	local restart = args.restart == true
	local before = args.before
	local m = P.mode(ctx)
	if m.mode ~= "edit" then
		error("a test is already running here (mode " .. m.mode .. "); stop_play first", 0)
	end
	if session.running and not restart then
		error("a " .. session.kind .. " test started by Runbox is still running; stop_play first or pass restart", 0)
	end
	endRunning(ctx)
	if type(before) == "string" and before ~= "" then
		runBefore(ctx, before)
	end
	local nonce = launch(ctx, kind)
	-- A start can fail after its first yield; wait a moment for that before saying "started".
	local waited = 0
	while waited < START_WAIT and session.running do
		task.wait(0.1)
		waited = waited + 0.1
	end
	if session.nonce == nonce and not session.running and session.last and not session.last.ok then
		error("could not start the test: " .. tostring(session.last.result), 0)
	end
	return { started = kind, note = "the test runs until stop_play; check with get_studio_mode" }
end

-- Runs compiled code in this (test server) DataModel with print/warn captured, waiting up to
-- timeout seconds; the same answer shape as a run through a fresh test.
local function runHere(ctx, fn, timeout)
	local logs, logCount = {}, 0
	local function capture(level)
		return function(...)
			local parts = {}
			for i = 1, select("#", ...) do
				parts[i] = tostring((select(i, ...)))
			end
			logCount = logCount + 1
			if #logs < PlayRunner.MAX_LOGS then
				table.insert(logs, { level = level, message = table.concat(parts, " ") })
			end
		end
	end
	local fields = { print = capture("info"), warn = capture("warn"), game = ctx.game,
		workspace = ctx.game:GetService("Workspace") }
	setfenv(fn, ctx.env and setmetatable(fields, { __index = ctx.env }) or Globals.env(fields))
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
	result.logCount = logCount
	result.truncated = logCount > #logs
	result.duration = os.clock() - started
	result.ranIn = "play_server"
	return result
end

local T = {}

T.start_play = {
	readOnly = false,
	recording = false,
	run = function(args, ctx)
		return startSession(args, ctx, "start_play")
	end,
}

T.run_server = {
	readOnly = false,
	recording = false,
	run = function(args, ctx)
		return startSession(args, ctx, "run_server")
	end,
}

T.stop_play = {
	readOnly = false,
	recording = false,
	run = function(args, ctx)
		local m = P.mode(ctx)
		local sts = U.svc(ctx, "StudioTestService")
		if m.mode == "play_server" or m.mode == "run" then
			-- Answer first: EndTest tears down this DataModel, this plugin copy and its
			-- connection with it, and an answer sent after that would never arrive.
			task.delay(0.3, function()
				local ok, err = pcall(function()
					sts:EndTest({ stoppedBy = "stop_play" })
				end)
				if not ok and ctx.log then
					ctx.log("stop_play: EndTest failed: " .. tostring(err))
				end
			end)
			return { stopping = true, mode = m.mode, note = "the test ends within a moment" }
		elseif m.mode == "play_client" then
			error("stop_play cannot run in a play-test client; it runs in the edit or server DataModel", 0)
		end
		if not ctx.plugin then
			error("no play test can be stopped from here (no plugin settings to signal the test server)", 0)
		end
		local nonce = session.running and session.nonce or nil
		local token = PlayStop.request(ctx.plugin, U.svc(ctx, "HttpService"), nonce, ctx.instanceId)
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
		local m = P.mode(ctx)
		local out = { mode = m.mode, paused = m.paused, testRunning = session.running or m.mode ~= "edit" }
		if m.mode ~= "edit" then
			local info = testArgs(ctx)
			out.startedBy = info and "runbox" or "user"
			out.test = info and info.kind or nil
		elseif session.running then
			out.startedBy = "runbox"
			out.test = session.kind
		end
		if session.last then
			out.lastTest = session.last
		end
		return out
	end,
}

-- Runs change() inside a ChangeHistoryService recording finished with Append, so the change
-- joins the step before it instead of making one of its own or landing in the user's next
-- step (audit F14: the engine wants a recording begun before any change). Unrecorded when
-- Studio refuses a recording (one is open, or a test runs).
local function appended(ctx, name, change)
	local okH, chs = pcall(U.svc, ctx, "ChangeHistoryService")
	local okB, rec = false, nil
	if okH and chs then
		okB, rec = pcall(function()
			return chs:TryBeginRecording(name, name)
		end)
	end
	local ok, err = pcall(change)
	if okB and rec then
		pcall(function()
			chs:FinishRecording(rec, ok and Enum.FinishRecordingOperation.Append
				or Enum.FinishRecordingOperation.Cancel)
		end)
	end
	if not ok then
		error(err, 0)
	end
end

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
		-- Compile exactly what the runner will hold: a vararg function around the code.
		local fn, cerr = loadstring(PlayRunner.wrapUser(code) .. "return __runbox_user", "=run_script_in_play_mode")
		if not fn then
			error("compile error: " .. tostring(cerr) .. " (the test was not started)", 0)
		end
		local m = P.mode(ctx)
		if m.mode == "play_server" or m.mode == "run" then
			-- the daemon routes this tool here while a test runs: run the code in this server
			local direct = assert(loadstring(code, "=run_script_in_play_mode"))
			return runHere(ctx, direct, timeout)
		end
		if m.mode ~= "edit" or session.running then
			error("a test is already running; stop_play first", 0)
		end
		local sss = U.svc(ctx, "ServerScriptService")
		local nonce = U.svc(ctx, "HttpService"):GenerateGUID(false)
		local runner = Instance.new("Script")
		runner.Name = RUNNER_NAME
		runner.Source = PlayRunner.source(code, timeout, nonce)
		appended(ctx, "Runbox: play-mode runner", function()
			local old = sss:FindFirstChild(RUNNER_NAME)
			if old then
				old:Destroy()
			end
			runner.Parent = sss
		end)
		local sts = U.svc(ctx, "StudioTestService")
		session.running = true
		session.kind = mode
		session.nonce = nonce
		session.last = nil
		-- If the test outlives its timeout (a heavy place, a runner that never ran), ask for a
		-- stop so this call answers before the daemon's deadline.
		task.delay(timeout + WATCHDOG_MARGIN, function()
			if session.running and session.nonce == nonce and ctx.plugin then
				pcall(PlayStop.request, ctx.plugin, U.svc(ctx, "HttpService"), nonce, ctx.instanceId)
			end
		end)
		local info = { nonce = nonce, parent = ctx.instanceId, kind = mode }
		local ok, res = pcall(function()
			if mode == "run_server" then
				return sts:ExecuteRunModeAsync({ runbox = info })
			end
			return sts:ExecutePlayModeAsync({ runbox = info })
		end)
		if session.nonce == nonce then
			session.running = false
		end
		pcall(appended, ctx, "Runbox: play-mode runner", function()
			runner:Destroy()
		end)
		if not ok then
			error("the play test failed to run: " .. tostring(res), 0)
		end
		if type(res) ~= "table" then
			return { success = false, error = "the test ended without a result (stopped by hand, or it outlived"
				.. " its timeout)", value = Values.encode(res) }
		end
		local logs = type(res.logs) == "table" and res.logs or {}
		local logCount = type(res.logCount) == "number" and res.logCount or #logs
		return {
			success = res.success == true,
			value = res.value,
			error = res.error,
			isTimeout = res.isTimeout == true,
			logs = logs,
			logCount = logCount,
			truncated = logCount > #logs,
			note = logCount > #logs and ("kept the first " .. #logs .. " of " .. logCount .. " log lines") or nil,
			duration = res.duration,
		}
	end,
}


return T
