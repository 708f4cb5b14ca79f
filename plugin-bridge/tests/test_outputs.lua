-- test_outputs.lua - every Studio tool's real answers (from its handler, on the fixture place)
-- validate against the tool's outputSchema in common/tools/, checked by tests/helpers/
-- check_output with the validator runboxd and runbox use (RUNBOX_CHECK_OUTPUT names it; ctest
-- sets it). Each tool runs with its required arguments and with every declared one, and a few
-- more runs reach the answers' optional fields (a cut page, an error entry, an undo step).

local C = require("catalog_args")
local Fake = require("fake")

local checker = os.getenv("RUNBOX_CHECK_OUTPUT")

-- Runs name with args on a fresh fixture place (prepare(place) first, if given); returns the
-- answer as JSON text.
local function answer(name, args, prepare)
	Fake.resetModules()
	local place = Fake.newPlace()
	place.ctx.env = setmetatable({ print = function() end }, { __index = _G })
	if prepare then
		prepare(place)
	end
	local Tools = Fake.load("Tools")
	local ok, res = pcall(Tools.get(name).run, args, place.ctx)
	truthy(ok, name .. " failed: " .. tostring(res))
	local http = place.game:GetService("HttpService")
	return http:JSONEncode(res)
end

local EXTRA_RUNS = {
	{ "get_file_tree", { depth = 3, max_nodes = 2 } },
	{ "search_objects", { class_name = "BasePart", limit = 1 } },
	{ "execute_luau", { code = "for i = 1, 100 do print(string.rep('x', 50)) end", max_output = 200 } },
	{ "mass_get_property", { paths = { "Workspace.Lava", "Workspace.Nope" }, property = "Transparency" } },
	{ "get_studio_mode", {}, function(place)
		Fake.state[place.game.RunService].mode = "paused_server"
	end },
	{ "undo", {}, function(place)
		local chs = place.game.ChangeHistoryService
		local id = chs:TryBeginRecording("Runbox: set_property")
		chs:FinishRecording(id, Enum.FinishRecordingOperation.Commit)
	end },
	{ "summarize_game", { limit = 2 } },
	{ "check_syntax", { source = "local = 1" } },
}

test("every Studio tool's answers validate against its outputSchema", function()
	truthy(checker, "RUNBOX_CHECK_OUTPUT names tests/helpers/check_output (ctest sets it)")
	local path = os.tmpname()
	local f = assert(io.open(path, "w"))
	local n = 0
	for _, name in ipairs(C.order) do
		if C.catalog[name].route == "studio" then
			truthy(C.catalog[name].outputSchema and C.catalog[name].outputSchema.properties,
				name .. " has an outputSchema that lists its fields")
			for _, all in ipairs({ false, true }) do
				f:write(name, "\t", answer(name, C.buildArgs(name, all)), "\n")
				n = n + 1
			end
		end
	end
	for _, run in ipairs(EXTRA_RUNS) do
		f:write(run[1], "\t", answer(run[1], run[2], run[3]), "\n")
		n = n + 1
	end
	f:close()
	local out = io.popen(checker .. " " .. path .. " 2>&1")
	local report = out:read("*a")
	out:close()
	os.remove(path)
	truthy(report:find(n .. " answers checked, 0 failed", 1, true), "check_output says:\n" .. report)
end)
