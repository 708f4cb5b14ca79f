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

test("execute_luau caps its output and says so", function()
	local _, run = Fake.setup()
	local r = run("execute_luau", { code = "for i = 1, 600 do print(i) end" })
	eq(#r.output, 500)
	eq(r.truncated, true)
	truthy(r.note, "note")
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

test("stop_play from the edit DataModel signals the server copy, which ends the test", function()
	local place, run = Fake.setup()
	local PlayStop = Fake.load("tools/PlayStop")
	run("start_play", {})
	-- the plugin copy in the play server watches the shared plugin settings
	local stopWatch = PlayStop.watch(place.plugin, place.game.StudioTestService)
	local r = run("stop_play", {})
	eq(r.requested, true)
	eq(place.plugin:GetSetting(PlayStop.SETTING), r.token)
	Fake.L.advance(2)
	eq(place.game.StudioTestService:_isRunning(), false)
	local m = run("get_studio_mode", {})
	eq(m.testRunning, false)
	eq(m.lastTest.ok, true)
	same(m.lastTest.result, { stoppedBy = "stop_play" })
	stopWatch()
	run("start_play", {}) -- a new test can start
end)

test("stop_play in the play server ends the test with EndTest", function()
	local place, run = Fake.setup()
	run("run_server", {})
	setMode(place, "play_server")
	eq(run("get_studio_mode", {}).mode, "play_server")
	eq(run("stop_play", {}).stopped, true)
	eq(place.game.StudioTestService:_isRunning(), false)
end)

test("stop_play in run mode stops the simulation; in a client it refuses", function()
	local place, run = Fake.setup()
	setMode(place, "run")
	eq(run("stop_play", {}).mode, "run")
	eq(place.state[place.game.RunService].stops, 1)
	eq(run("get_studio_mode", {}).mode, "edit")
	setMode(place, "play_client")
	raises(function() run("stop_play", {}) end, "cannot run in a play-test client")
	setMode(place, "play_server")
	raises(function() run("stop_play", {}) end, "could not end the test")
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

test("run_script_in_play_mode runs code in the server and returns its result and logs", function()
	local place, run = Fake.setup()
	local r = run("run_script_in_play_mode", { code = "print('in the server') warn('w') return {score = 3}" })
	eq(r.success, true)
	eq(r.value, "{\"score\":3}")
	same(r.logs, { { level = "info", message = "in the server" }, { level = "warn", message = "w" } })
	eq(place.game.ServerScriptService:FindFirstChild("RunboxPlayRunner"), nil, "runner removed")
	eq(run("get_studio_mode", {}).testRunning, false)
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
	run("undo", {})
	run("redo", {})
	local log = place.state[place.game.ChangeHistoryService].log
	eq(log[1].op, "undo")
	eq(log[2].op, "redo")
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
