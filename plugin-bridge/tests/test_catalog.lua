-- test_catalog.lua - the catalog-driven test: the Studio tools of common/tools/studio-*.json and
-- the plugin's handlers must agree. Every route "studio" tool has a handler (and every handler a
-- catalog entry); readOnly matches readOnlyHint; each handler runs on the fixture place with
-- arguments built from its schema (the required ones, then every declared one), and in the
-- second run it must read every argument the catalog declares — so an argument name the plugin
-- does not read fails here, not in front of a user.

local cjson = require("cjson")
local Fake = require("fake")

local root = Fake.srcDir .. "/../.."

local function readJson(path)
	local f = assert(io.open(path, "r"))
	local text = f:read("*a")
	f:close()
	return cjson.decode(text)
end

local function catalogFiles()
	local out = {}
	local p = io.popen("ls " .. root .. "/common/tools/studio-*.json 2>/dev/null")
	for line in p:lines() do
		table.insert(out, line)
	end
	p:close()
	return out
end

local catalog = {} -- name -> tool
local order = {}
for _, file in ipairs(catalogFiles()) do
	for _, t in ipairs(readJson(file).tools) do
		catalog[t.name] = t
		table.insert(order, t.name)
	end
end
table.sort(order)

-- Sample values by argument name (pointing at objects of the fixture place).
local SAMPLES = {
	path = "Workspace.Model.Part",
	paths = { "Workspace.Model.Part", "Workspace.Model.Handle" },
	property = "Transparency",
	value = 0.5,
	class_name = "Part",
	parent = "Workspace",
	name = "Thing",
	new_name = "Copy",
	new_parent = "Workspace",
	offset = { type = "Vector3", value = { 4, 0, 0 } },
	position = { type = "Vector3", value = { 0, 10, 0 } },
	query = "Part",
	limit = 10,
	depth = 2,
	max_nodes = 50,
	max_scripts = 50,
	recursive = true,
	case_sensitive = false,
	expression = "value + index",
	operation = "add",
	tag = "Lava",
	code = "print('ran') return 1 + 1",
	timeout = 5,
	mode = "start_play",
	asset_id = 1001,
	start_line = 1,
	end_line = 2,
	after_line = 1,
	lines = "-- inserted",
	replacement = "local y = 2",
	source = "print('new')",
	expected = "print(\"hello\")\nlocal x = 1",
	count = 2,
	max_chars = 1000,
	restart = true,
	operation_id = "op-1",
	before = "local setup = 1",
	objects = { { class_name = "Part", parent = "Workspace", name = "A" },
		{ class_name = "Folder", parent = "ReplicatedStorage" } },
	duplicates = { { path = "Workspace.Model.Part", count = 1 }, { path = "Workspace.Lava", count = 2 } },
}
local OBJECT_SAMPLES = { properties = { Transparency = 0.25, Anchored = true } }
local ARRAY_SAMPLES = { properties = { "Anchored", "Size" } }

-- Per-tool overrides (a script for script tools, the tagged part for attributes and tags...).
local SCRIPT = "ServerScriptService.MainScript"
local OVERRIDES = {
	get_script_source = { path = SCRIPT },
	set_script_source = { path = SCRIPT },
	edit_script_lines = { path = SCRIPT },
	insert_script_lines = { path = SCRIPT },
	delete_script_lines = { path = SCRIPT },
	get_attribute = { path = "Workspace.Lava", name = "Damage" },
	set_attribute = { path = "Workspace.Lava", name = "Damage" },
	get_attributes = { path = "Workspace.Lava" },
	delete_attribute = { path = "Workspace.Lava", name = "Damage" },
	search_by_property = { property = "Anchored", value = true },
	search_files = { query = "hello" },
	get_class_info = { class_name = "Part" },
	insert_model = { query = "Tree" },
}
-- Tools whose required arguments alone cannot succeed: extra ones for the first run.
local EXTRA = {
	search_objects = { query = "Part" },
	insert_model = { asset_id = 1001 },
}

local function sample(tool, name, schema)
	local o = OVERRIDES[tool]
	if o and o[name] ~= nil then
		return o[name]
	end
	if schema.type == "object" and OBJECT_SAMPLES[name] then
		return OBJECT_SAMPLES[name]
	end
	if schema.type == "array" and ARRAY_SAMPLES[name] then
		return ARRAY_SAMPLES[name]
	end
	if SAMPLES[name] ~= nil then
		return SAMPLES[name]
	end
	if schema.enum then
		return schema.enum[1]
	end
	error(tool .. ": no sample value for argument \"" .. name .. "\"; add one to SAMPLES")
end

local LUA_TYPES = { string = "string", integer = "number", number = "number", boolean = "boolean", array = "table",
	object = "table" }

local function checkType(tool, name, schema, v)
	local t = schema.type
	if t == nil then
		return
	end
	eq(type(v), LUA_TYPES[t], tool .. "." .. name .. " sample type")
	if t == "integer" then
		eq(v, math.floor(v), tool .. "." .. name .. " is whole")
	end
	if schema.enum then
		local found = false
		for _, e in ipairs(schema.enum) do
			found = found or e == v
		end
		truthy(found, tool .. "." .. name .. " sample in enum")
	end
end

local function buildArgs(tool, all)
	local schema = catalog[tool].inputSchema
	local args = {}
	local props = schema.properties or {}
	local names = {}
	if all then
		for name in pairs(props) do
			table.insert(names, name)
		end
	else
		for _, name in ipairs(schema.required or {}) do
			table.insert(names, name)
		end
		for name in pairs(EXTRA[tool] or {}) do
			table.insert(names, name)
		end
	end
	for _, name in ipairs(names) do
		truthy(props[name], tool .. ": \"" .. name .. "\" is declared in properties")
		local v = (not all and EXTRA[tool] and EXTRA[tool][name]) or sample(tool, name, props[name])
		checkType(tool, name, props[name], v)
		args[name] = v
	end
	return args
end

-- Wraps args so the test sees which names the handler reads.
local function watched(args)
	local seen = {}
	local proxy = setmetatable({}, {
		__index = function(_, k)
			seen[k] = true
			return args[k]
		end,
	})
	return proxy, seen
end

local function freshCtx()
	Fake.resetModules()
	local place = Fake.newPlace()
	place.ctx.env = setmetatable({ print = function() end }, { __index = _G })
	return place, Fake.load("Tools")
end

test("the catalog has the 46 Studio tools of issue 4 plus the session and history tools", function()
	local expected = { "get_file_tree", "search_files", "get_place_info", "get_services", "search_objects",
		"get_instance_properties", "get_instance_children", "search_by_property", "get_class_info",
		"get_project_structure", "summarize_game", "set_property", "mass_set_property", "mass_get_property",
		"set_calculated_property", "set_relative_property", "create_object", "create_object_with_properties",
		"mass_create_objects", "mass_create_objects_with_properties", "delete_object", "smart_duplicate",
		"mass_duplicate", "get_script_source", "set_script_source", "edit_script_lines", "insert_script_lines",
		"delete_script_lines", "get_attribute", "set_attribute", "get_attributes", "delete_attribute", "get_tags",
		"add_tag", "remove_tag", "get_tagged", "get_selection", "execute_luau", "get_console_output",
		"clear_console_output", "start_play", "stop_play", "run_server", "get_studio_mode", "run_script_in_play_mode",
		"insert_model", "list_studios", "set_active_studio", "undo", "redo", "check_syntax" }
	eq(#expected, 51)
	for _, n in ipairs(expected) do
		truthy(catalog[n], "catalog entry for " .. n)
	end
	eq(#order, 51, "tools in studio-*.json")
end)

test("routes: the daemon answers exactly the four local tools", function()
	local locals = { list_studios = true, set_active_studio = true, get_console_output = true,
		clear_console_output = true }
	for _, n in ipairs(order) do
		eq(catalog[n].route, locals[n] and "local" or "studio", n .. " route")
	end
end)

test("every studio tool has a handler, every handler a studio tool, readOnly agrees", function()
	local _, Tools = freshCtx()
	for _, n in ipairs(order) do
		local h = Tools.get(n)
		if catalog[n].route == "studio" then
			truthy(h, "handler for " .. n)
			eq(h.readOnly, catalog[n].annotations.readOnlyHint == true, n .. " readOnly vs readOnlyHint")
			eq(type(h.run), "function", n .. ".run")
		else
			eq(h, nil, "local tool " .. n .. " has no plugin handler")
		end
	end
	for _, n in ipairs(Tools.names()) do
		truthy(catalog[n] and catalog[n].route == "studio", "catalog studio entry for handler " .. n)
	end
end)

for _, n in ipairs(order) do
	if catalog[n].route == "studio" then
		test(n .. " runs with its required arguments", function()
			local place, Tools = freshCtx()
			local args = buildArgs(n, false)
			local ok, res = pcall(Tools.get(n).run, args, place.ctx)
			truthy(ok, n .. " failed: " .. tostring(res))
			-- the answer must travel as JSON
			local http = place.game:GetService("HttpService")
			local okJ, text = pcall(http.JSONEncode, http, res)
			truthy(okJ, n .. " result is not JSON-able: " .. tostring(text))
			-- Every Studio tool declares an outputSchema of type object, so the answer must be a
			-- JSON object (the MCP result's structuredContent).
			eq(catalog[n].outputSchema and catalog[n].outputSchema.type, "object", n .. " outputSchema")
			eq(string.sub(text, 1, 1), "{", n .. " answers a JSON object: " .. string.sub(text, 1, 80))
		end)
		test(n .. " reads every argument the catalog declares", function()
			local place, Tools = freshCtx()
			local args = buildArgs(n, true)
			local proxy, seen = watched(args)
			local ok, res = pcall(Tools.get(n).run, proxy, place.ctx)
			truthy(ok, n .. " failed with all arguments: " .. tostring(res))
			for name in pairs(catalog[n].inputSchema.properties or {}) do
				-- operation_id is the daemon's: it answers repeats itself and never sends it on
				if name ~= "operation_id" then
					truthy(seen[name], n .. " never reads declared argument \"" .. name .. "\"")
				end
			end
		end)
	end
end

test("catalog descriptions say what a model needs; the shared rules are said once", function()
	-- Path syntax and the value encoding are the Studio profile's rules (the server's
	-- instructions), not repeated in every description (issue 11: tools/list within budget).
	local rules = readJson(root .. "/common/tools/profiles.json").profiles.studio.rules
	truthy(rules:find("Workspace[\"a.b\"]", 1, true), "the rules explain bracket quoting")
	for _, tag in ipairs({ "Vector3", "Color3", "CFrame", "Enum", "Font", "PhysicalProperties", "Faces",
		"Content", "Region3", "Ray", "Vector3int16" }) do
		truthy(rules:find(tag, 1, true), "the rules explain " .. tag)
	end
	for _, n in ipairs(order) do
		local t = catalog[n]
		truthy(#t.description >= 30, n .. " description is too short")
		truthy(not t.description:find("Workspace[\"a.b\"]", 1, true), n .. " repeats the path rules")
		local props = t.inputSchema.properties or {}
		if props.limit or props.max_nodes or props.max_scripts then
			truthy(t.description:find("truncated", 1, true), n .. " says how a cut answer looks")
		end
		eq(t.inputSchema.additionalProperties, false, n .. " refuses unknown arguments")
	end
end)
