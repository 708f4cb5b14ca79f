-- test_tools_exec.lua - execute_luau, the play-test tools (StudioTestService, with a stop that
-- works in each DataModel), insert_model (InsertService) and undo/redo.

local Fake = require("fake")

local function setMode(place, mode)
	place.state[place.game.RunService].mode = mode
end

---------------------------------------------------------------- execute_luau
test("execute_luau captures print/warn and returns values, tagged", function()
	local _, run = Fake.setup()
	local r = run("execute_luau", { code = "print('a', 1, nil) warn('careful') return workspace.Lava, 2, nil, Vector3.new(1,2,3)" })
	same(r.output, { { level = "info", message = "a 1 nil" }, { level = "warn", message = "careful" } })
	same(r.returns, { { type = "Instance", value = "Workspace.Lava" }, 2, { type = "nil" },
		{ type = "Vector3", value = { 1, 2, 3 } } })
end)

test("execute_luau changes the place and sees game", function()
	local place, run = Fake.setup()
	run("execute_luau", { code = "local p = Instance.new('Part') p.Name = 'FromCode' p.Parent = game.Workspace" })
	eq(place.game.Workspace.FromCode.ClassName, "Part")
end)

test("execute_luau reports compile and runtime errors with the output so far", function()
	local _, run = Fake.setup()
	raises(function() run("execute_luau", { code = "local = 1" }) end, "compile error")
	local err = raises(function() run("execute_luau", { code = "print('step 1') error('boom')" }) end, "runtime error")
	truthy(err:find("boom", 1, true) and err:find("step 1", 1, true), err)
end)

test("execute_luau caps its output at max_output and says so, with the total printed", function()
	local _, run = Fake.setup()
	-- 600 lines of 10 characters: 6000 characters, over max_output = 1000
	local r = run("execute_luau", { code = "for i = 1, 600 do print(string.format('%10d', i)) end return 7",
		max_output = 1000 })
	eq(#r.output, 100, "lines kept")
	eq(r.truncated, true)
	same(r.total, { lines = 600, characters = 6000 })
	truthy(r.note:find("max_output=1000", 1, true), r.note)
	eq(r.returns[1], 7, "the code ran to its end")
	-- one line over the cap is cut, not dropped
	local long = run("execute_luau", { code = "print(string.rep('x', 5000))", max_output = 1000 })
	eq(#long.output[1].message, 1000)
	eq(long.total.characters, 5000)
	-- the line cap holds for many short lines
	local many = run("execute_luau", { code = "for i = 1, 1500 do print('a') end", max_output = 1000000 })
	eq(#many.output, 1000)
	eq(many.total.lines, 1500)
	-- under the cap: no truncated, no total
	local small = run("execute_luau", { code = "print('hi')" })
	eq(small.truncated, nil)
	eq(small.total, nil)
	-- a failure says that its output was cut too
	local err = raises(function()
		run("execute_luau", { code = "for i = 1, 50 do print(string.rep('y', 100)) end error('late')", max_output = 500 })
	end, "late")
	truthy(err:find("5000 characters were printed", 1, true), err)
end)

---------------------------------------------------------------- play tests
test("start_play starts a session and answers at once; get_studio_mode sees it", function()
	local place, run = Fake.setup()
	local r = run("start_play", {})
	eq(r.started, "start_play")
	truthy(place.game.StudioTestService:_isRunning(), "StudioTestService session running")
	local m = run("get_studio_mode", {})
	eq(m.mode, "edit")
	eq(m.testRunning, true)
	raises(function() run("start_play", {}) end, "still running")
	raises(function() run("run_server", {}) end, "still running")
end)

-- The test server's DataModel of the running session, and a ctx for handlers running there.
local function testServer(place)
	local session = place.state[place.game.StudioTestService].session
	truthy(session, "a test session is running")
	local g = session.game
	return g, { game = g, plugin = place.ctx.plugin, env = place.ctx.env,
		services = setmetatable({}, { __index = function(_, n) return g:GetService(n) end }) }
end

test("stop_play from the edit DataModel signals the test's server copy, which ends the test", function()
	local place, run = Fake.setup()
	local PlayStop = Fake.load("tools/PlayStop")
	run("start_play", {})
	local g = testServer(place)
	-- F6: the server copy knows its test (the nonce in the test arguments) and honours only
	-- requests addressed to it, even one written before its watch began.
	local r = run("stop_play", {})
	eq(r.requested, true)
	local req = place.plugin:GetSetting(PlayStop.SETTING)
	eq(req.token, r.token)
	eq(req.nonce, g.StudioTestService:GetTestArgs().runbox.nonce)
	local stopWatch = PlayStop.watch(place.plugin, g.StudioTestService)
	Fake.L.advance(2)
	eq(place.game.StudioTestService:_isRunning(), false)
	local m = run("get_studio_mode", {})
	eq(m.testRunning, false)
	eq(m.lastTest.ok, true)
	same(m.lastTest.result, { stoppedBy = "stop_play" })
	stopWatch()
	run("start_play", {}) -- a new test can start
	-- the old request is not for the new test
	local stop2 = PlayStop.watch(place.plugin, testServer(place).StudioTestService)
	Fake.L.advance(3)
	eq(place.game.StudioTestService:_isRunning(), true, "a stale request does not end a new test")
	stop2()
end)

test("stop_play in the test server answers first, then ends the test (Play and Run mode)", function()
	for _, kind in ipairs({ "start_play", "run_server" }) do
		local place, run, Tools = Fake.setup()
		run(kind, {})
		local _, sctx = testServer(place)
		-- F3: the answer leaves before EndTest tears the server DataModel down.
		local r = Tools.get("stop_play").run({}, sctx)
		eq(r.stopping, true)
		eq(place.game.StudioTestService:_isRunning(), true, "not ended before the answer")
		Fake.L.advance(1)
		eq(place.game.StudioTestService:_isRunning(), false, kind .. " ended")
		-- F2: never RunService:Stop (it keeps the simulation's changes)
		eq(place.state[sctx.game.RunService].stops, nil)
	end
end)

test("stop_play in a client refuses; get_studio_mode says paused and who started the test", function()
	local place, run, Tools = Fake.setup()
	setMode(place, "play_client")
	raises(function() run("stop_play", {}) end, "cannot run in a play-test client")
	-- F5: a paused test is neither IsEdit nor IsRunning; it is not "edit".
	setMode(place, "paused_server")
	local m = run("get_studio_mode", {})
	eq(m.mode, "play_server")
	eq(m.paused, true)
	eq(m.startedBy, "user")
	raises(function() run("start_play", {}) end, "already running")
	setMode(place, "edit")
	-- a test the user started: its server copy says so
	local sg = place.game.StudioTestService:_startManual()
	local sctx = { game = sg, plugin = place.plugin, services = setmetatable({}, { __index = function(_, n) return sg:GetService(n) end }) }
	local sm = Tools.get("get_studio_mode").run({}, sctx)
	eq(sm.startedBy, "user")
	eq(Tools.get("stop_play").run({}, sctx).stopping, true)
	Fake.L.advance(1)
	eq(place.game.StudioTestService:_isRunning(), false, "EndTest ends a test the user started")
end)

test("start_play reports a start that fails after yielding, and restart ends the old test", function()
	local place, run = Fake.setup()
	-- F4: ExecutePlayModeAsync may fail after its first yield.
	place.state[place.game.StudioTestService].failAfterYield = "Previous call to start play session has not been completed"
	raises(function() run("start_play", {}) end, "could not start the test: Previous call")
	place.state[place.game.StudioTestService].failNow = "Studio is busy"
	raises(function() run("start_play", {}) end, "could not start the test: ")
	run("start_play", {})
	raises(function() run("start_play", {}) end, "pass restart")
	local PlayStop = Fake.load("tools/PlayStop")
	local first = testServer(place)
	local stop = PlayStop.watch(place.plugin, first.StudioTestService)
	-- restart: the old test is asked to end and the new one starts after it, with before run first
	local r = run("start_play", { restart = true, before = "workspace.Lava.Name = 'Cool'" })
	eq(r.started, "start_play")
	stop()
	local second = testServer(place)
	truthy(second ~= first, "a new test DataModel")
	eq(place.game.Workspace:FindFirstChild("Cool").ClassName, "Part", "before ran in the edit DataModel")
	truthy(second.Workspace:FindFirstChild("Cool"), "before ran before the place was copied")
	second.StudioTestService:EndTest("done")
	Fake.L.advance(1)
	raises(function() run("run_server", { before = "error('no')" }) end, "before failed")
	eq(place.game.StudioTestService:_isRunning(), false, "no test after a failed before")
end)

test("stop_play retries when Studio fails to read the plugin settings, and says so when it keeps failing", function()
	local place, run = Fake.setup()
	run("start_play", {})
	testServer(place)
	place.plugin.getFails = 2 -- two failed read-backs, then the settings answer
	eq(run("stop_play", {}).requested, true)
	place.plugin.getFails = 100
	raises(function() run("stop_play", {}) end, "could not write the stop request")
	place.plugin.getFails = 0
end)

test("stop_play without plugin settings says why", function()
	local place, run = Fake.setup()
	place.ctx.plugin = nil
	raises(function() run("stop_play", {}) end, "no plugin settings")
end)

test("start_play refuses while Studio is already testing", function()
	local place, run = Fake.setup()
	setMode(place, "play_server")
	raises(function() run("start_play", {}) end, "already running")
end)

test("run_script_in_play_mode: code that uses ... or assigns the runner's names still ends the test", function()
	-- F1: the user code is a vararg function before the runner's locals.
	local place, run = Fake.setup()
	local v = run("run_script_in_play_mode", { code = "local n = select('#', ...) return n" })
	eq(v.success, true)
	eq(v.value, "0")
	local g = run("run_script_in_play_mode", { code = "finished = true conn = nil logs = 5 return 'ok'" })
	eq(g.success, true)
	eq(g.value, "ok")
	eq(run("get_studio_mode", {}).testRunning, false)
	-- F14: a stale runner (no nonce for it) does nothing in a test it was not made for
	local Playtest = Fake.load("tools/Playtest")
	truthy(Playtest.run_script_in_play_mode, "tool present")
end)

test("run_script_in_play_mode runs code in the server and returns its result and logs", function()
	local place, run = Fake.setup()
	local r = run("run_script_in_play_mode", { code = "print('in the server') warn('w') return {score = 3}" })
	eq(r.success, true)
	eq(r.value, "{\"score\":3}")
	same(r.logs, { { level = "info", message = "in the server" }, { level = "warn", message = "w" } })
	eq(place.game.ServerScriptService:FindFirstChild("RunboxPlayRunner"), nil, "runner removed")
	eq(run("get_studio_mode", {}).testRunning, false)
end)

-- F14: the runner is added and removed inside recordings finished with Append, so it never
-- lands in the user's next undo step and makes no step of its own.
test("run_script_in_play_mode adds and removes its runner inside appended recordings", function()
	local place, run = Fake.setup()
	local chs = place.state[place.game.ChangeHistoryService]
	local undoBefore = #chs.undo
	eq(run("run_script_in_play_mode", { code = "return 1" }).success, true)
	local ops = {}
	for _, l in ipairs(chs.log) do
		if l.op == "begin" then
			table.insert(ops, "begin " .. l.name)
		elseif l.op == "finish" then
			table.insert(ops, "finish " .. l.operation.Name)
		end
	end
	same(ops, { "begin Runbox: play-mode runner", "finish Append", "begin Runbox: play-mode runner", "finish Append" })
	eq(#chs.undo, undoBefore, "no undo step of its own")
	eq(place.game.ServerScriptService:FindFirstChild("RunboxPlayRunner"), nil)
end)

test("run_script_in_play_mode: yields, errors, timeouts, syntax errors", function()
	local place, run = Fake.setup()
	local y = run("run_script_in_play_mode", { code = "task.wait(3) return 'late'", timeout = 10, mode = "run_server" })
	eq(y.value, "late")
	local e = run("run_script_in_play_mode", { code = "error('kaput')" })
	eq(e.success, false)
	truthy(e.error:find("kaput", 1, true), e.error)
	local t = run("run_script_in_play_mode", { code = "while true do task.wait(1) end", timeout = 5 })
	eq(t.isTimeout, true)
	eq(t.success, false)
	local sessions = place.state[place.game.StudioTestService].sessions
	raises(function() run("run_script_in_play_mode", { code = "if then" }) end, "the test was not started")
	eq(place.state[place.game.StudioTestService].sessions, sessions, "no session for a syntax error")
	raises(function() run("run_script_in_play_mode", { code = "return 1", mode = "fly" }) end, "mode must be")
end)

---------------------------------------------------------------- insert_model
test("insert_model by asset id, with parent and position", function()
	local place, run = Fake.setup()
	local r = run("insert_model", { asset_id = 555, parent = "Workspace.Model", position = { 0, 20, 0 } })
	same(r.inserted, { "Workspace.Model.Asset555" })
	eq(place.game.Workspace.Model.Asset555.Position, Vector3.new(0, 20, 0))
end)

test("insert_model by query, and its failures", function()
	local place, run = Fake.setup()
	local r = run("insert_model", { query = "tree" })
	eq(r.assetId, 1002)
	eq(r.name, "Tree")
	same(r.inserted, { "Workspace.Asset1002" })
	raises(function() run("insert_model", { query = "spaceship" }) end, "no free model matches")
	raises(function() run("insert_model", {}) end, "give asset_id")
	place.state[place.game.InsertService].denied[7] = true
	same(run("insert_model", { asset_id = 7 }).inserted, { "Workspace.Object7" }, "GetObjects fallback")
	place.state[place.game].objectsDenied = { [7] = true }
	raises(function() run("insert_model", { asset_id = 7 }) end, "could not load asset 7")
	raises(function() run("insert_model", { asset_id = 1.5 }) end, "positive integer")
end)

---------------------------------------------------------------- history
test("undo and redo drive ChangeHistoryService and run outside recordings", function()
	local place, run, Tools = Fake.setup()
	-- F7: with nothing to undo the engine raises; the tool says so instead.
	same(run("undo", {}), { done = false, reason = "nothing to undo" })
	same(run("redo", {}), { done = false, reason = "nothing to redo" })
	local chs = place.game.ChangeHistoryService
	local id = chs:TryBeginRecording("Runbox: set_property", "Runbox set_property")
	chs:FinishRecording(id, Enum.FinishRecordingOperation.Commit)
	same(run("undo", {}), { done = true, step = "Runbox: set_property" })
	same(run("redo", {}), { done = true, step = "Runbox: set_property" })
	local log = place.state[chs].log
	eq(log[#log - 1].op, "undo")
	eq(log[#log].op, "redo")
	for _, n in ipairs({ "undo", "redo", "start_play", "stop_play", "run_server", "run_script_in_play_mode" }) do
		eq(Tools.get(n).recording, false, n .. " recording")
	end
	eq(Tools.get("set_property").recording, nil)
end)

test("run_script_in_play_mode inside a running play server runs the code there", function()
	local place, run = Fake.setup()
	place.state[place.game.RunService].mode = "play_server"
	local r = run("run_script_in_play_mode", { code = "print('here') task.wait(1) return 5", timeout = 10 })
	eq(r.success, true)
	eq(r.value, "5")
	eq(r.ranIn, "play_server")
	same(r.logs, { { level = "info", message = "here" } })
	eq(place.state[place.game.StudioTestService].sessions, nil, "no new test session")
	local t = run("run_script_in_play_mode", { code = "task.wait(100)", timeout = 2 })
	eq(t.isTimeout, true)
	local e = run("run_script_in_play_mode", { code = "error('bad', 0)" })
	eq(e.error, "bad")
	eq(run("get_studio_mode", {}).testRunning, true)
end)

test("execute_luau: an error raised as a table says what it holds (F23)", function()
	local _, run = Fake.setup()
	raises(function() run("execute_luau", { code = "error({ message = 'custom failure' })" }) end, "custom failure")
	raises(function() run("execute_luau", { code = "error({ code = 5 })" }) end, "\"code\":5")
end)

test("the plugin never calls getfenv/setfenv on its own code (F22: it deoptimises the plugin)", function()
	local p = io.popen("cd " .. Fake.srcDir .. " && grep -rn 'getfenv *(' --include='*.lua' . || true")
	local hits = p:read("*a")
	p:close()
	eq(hits, "", "getfenv calls")
	local q = io.popen("cd " .. Fake.srcDir .. " && grep -rn 'setfenv *(' --include='*.lua' . || true")
	for line in q:lines() do
		-- only on a chunk loadstring just compiled: fn, the user's code
		truthy(line:find("setfenv%(fn,") or line:find("setfenv%(direct,"), "setfenv only on loaded code: " .. line)
	end
	q:close()
end)
