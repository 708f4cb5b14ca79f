-- test_catalog.lua - the catalog-driven test: the Studio tools of common/tools/studio-*.json and
-- the plugin's handlers must agree. Every route "studio" tool has a handler (and every handler a
-- catalog entry); readOnly matches readOnlyHint; each handler runs on the fixture place with
-- arguments built from its schema (the required ones, then every declared one), and in the
-- second run it must read every argument the catalog declares — so an argument name the plugin
-- does not read fails here, not in front of a user.

local C = require("catalog_args")
local Fake = require("fake")

local catalog, order, root = C.catalog, C.order, C.root
local readJson, buildArgs, watched = C.readJson, C.buildArgs, C.watched

local function freshCtx()
	Fake.resetModules()
	local place = Fake.newPlace()
	place.ctx.env = setmetatable({ print = function() end }, { __index = _G })
	return place, Fake.load("Tools")
end

test("the catalog has the 46 Studio tools of issue 4 plus the session, history and issue-11 tools", function()
	local expected = { "get_file_tree", "search_files", "get_place_info", "get_services", "search_objects",
		"get_instance_properties", "get_instance_children", "search_by_property", "get_class_info",
		"get_project_structure", "summarize_game", "set_property", "mass_set_property", "mass_get_property",
		"set_calculated_property", "set_relative_property", "create_object", "create_object_with_properties",
		"mass_create_objects", "mass_create_objects_with_properties", "delete_object", "smart_duplicate",
		"mass_duplicate", "get_script_source", "set_script_source", "edit_script_lines", "insert_script_lines",
		"delete_script_lines", "get_attribute", "set_attribute", "get_attributes", "delete_attribute", "get_tags",
		"add_tag", "remove_tag", "get_tagged", "get_selection", "execute_luau", "get_console_output",
		"clear_console_output", "start_play", "stop_play", "run_server", "get_studio_mode", "run_script_in_play_mode",
		"insert_model", "list_studios", "set_active_studio", "undo", "redo", "check_syntax", "get_studio_state",
		"capture_screenshot" }
	eq(#expected, 53)
	for _, n in ipairs(expected) do
		truthy(catalog[n], "catalog entry for " .. n)
	end
	eq(#order, 53, "tools in studio-*.json")
end)

test("routes: the daemon answers exactly the five local tools", function()
	local locals = { list_studios = true, set_active_studio = true, get_console_output = true,
		clear_console_output = true, get_studio_state = true }
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
	local profiles = readJson(root .. "/common/tools/profiles.json")
	local rules = profiles.profiles.studio.rules
	for _, field in ipairs({ "truncated", "total", "next_offset", "offset", "next_cursor", "cursor" }) do
		truthy(profiles.instructions:find(field, 1, true), "the instructions explain " .. field)
	end
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
			-- a cut answer says so (truncated, in the output schema) and how to get the rest (an
			-- offset, a cursor or since_id to pass); the instructions explain the fields once
			local out = t.outputSchema and t.outputSchema.properties or {}
			truthy(out.truncated, n .. ": the output schema has truncated")
			truthy(props.offset or props.cursor or props.since_id, n .. " takes offset, cursor or since_id")
			if props.offset then
				truthy(out.next_offset and out.total, n .. ": the output schema has total and next_offset")
			end
			if props.cursor then
				truthy(out.next_cursor, n .. ": the output schema has next_cursor")
			end
		end
		eq(t.inputSchema.additionalProperties, false, n .. " refuses unknown arguments")
	end
end)
