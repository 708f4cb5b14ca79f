-- test_tools_read.lua - the read-only instance tools: tree, searches, properties, classes,
-- summaries, selection; limits cut answers with a note; bad paths name the segment.

local Fake = require("fake")

test("get_file_tree shows the main services and respects depth", function()
	local _, run = Fake.setup()
	local r = run("get_file_tree", { depth = 1 })
	eq(r.root, "game")
	local names = {}
	for _, c in ipairs(r.tree.children) do
		names[c.name] = c
	end
	truthy(names.Workspace and names.ServerScriptService and names.StarterGui, "main services")
	eq(names.HttpService, nil, "empty engine services are hidden")
	eq(names.Workspace.children, nil, "depth 1 stops below the services")
	eq(names.Workspace.more, 8)
	eq(r.truncated, false)
end)

test("get_file_tree under a path, cut at max_nodes with a note", function()
	local _, run = Fake.setup()
	local r = run("get_file_tree", { path = "Workspace.Model", depth = 5 })
	eq(r.root, "Workspace.Model")
	eq(r.tree.children[1].name, "Part")
	eq(r.tree.children[1].children[1].name, "Sparks")
	local cut = run("get_file_tree", { path = "Workspace", depth = 3, max_nodes = 3 })
	eq(cut.truncated, true)
	eq(cut.nodes, 3)
	truthy(cut.note:find("max_nodes=3", 1, true), cut.note)
	raises(function() run("get_file_tree", { path = "Workspace.Nope" }) end, "no child named \"Nope\"")
end)

test("search_files finds scripts by name and by source line, draft text included", function()
	local place, run = Fake.setup()
	local r = run("search_files", { query = "HELLO" })
	eq(#r.results, 1)
	eq(r.results[1].path, "ServerScriptService.MainScript")
	same(r.results[1].lines, { { line = 1, text = "print(\"hello\")" } })
	eq(#run("search_files", { query = "HELLO", case_sensitive = true }).results, 0)
	eq(run("search_files", { query = "Util" }).results[1].nameMatch, true)
	place.state[place.game.ReplicatedStorage.Shared].editorSource = "-- draft with needle"
	eq(run("search_files", { query = "needle" }).results[1].path, "ReplicatedStorage.Shared")
	local lim = run("search_files", { query = "return", limit = 1 })
	eq(#lim.results, 1)
	eq(lim.truncated, true)
end)

test("get_place_info and get_services describe the place", function()
	local _, run = Fake.setup()
	local info = run("get_place_info", {})
	eq(info.name, "TestPlace")
	eq(info.placeId, 12345)
	eq(info.mode, "edit")
	eq(info.scripts, 3)
	local svcs = run("get_services", {}).services
	local found = false
	for _, s in ipairs(svcs) do
		if s.name == "Workspace" then
			found = s.children == 8
		end
	end
	truthy(found, "Workspace with 8 children")
end)

test("search_objects by name, by class, limited", function()
	local _, run = Fake.setup()
	local r = run("search_objects", { query = "part" })
	local paths = {}
	for _, x in ipairs(r.results) do
		paths[x.path] = true
	end
	truthy(paths["Workspace.Model.Part"], "Part found")
	local parts = run("search_objects", { class_name = "BasePart", path = "Workspace" })
	eq(#parts.results, 6) -- Terrain, Baseplate, Model.Part, Model.Handle, Inner, Lava
	local one = run("search_objects", { class_name = "BasePart", limit = 1 })
	eq(one.truncated, true)
	truthy(one.note, "note when cut")
	raises(function() run("search_objects", {}) end, "give a query")
end)

test("get_instance_properties reads tagged values, attributes, tags", function()
	local _, run = Fake.setup()
	local r = run("get_instance_properties", { path = "Workspace.Lava" })
	eq(r.className, "Part")
	eq(r.parent, "Workspace")
	same(r.properties.Material, { type = "Enum", value = "Enum.Material.Neon" })
	-- BasePart.Color is stored as Color3uint8 and read back as float32 components (engine)
	same(r.properties.Color, { type = "Color3", value = { 1, Fake.I.f32(51 / 255), 0 } })
	eq(r.properties.Anchored, false)
	same(r.attributes, { Damage = 10, Label = "hot" })
	same(r.tags, { "Lava" })
	local some = run("get_instance_properties", { path = "Workspace.Link", properties = { "Value", "Bogus" } })
	same(some.properties.Value, { type = "Instance", value = "Workspace.Model.Part" })
	same(some.missing, { "Bogus" })
	local weld = run("get_instance_properties", { path = "Workspace.Weld", properties = { "Part1" } })
	same(weld.properties.Part1, { type = "nil" })
	raises(function() run("get_instance_properties", { path = "Workspace.Lava.X" }) end, "Workspace.Lava has no child")
end)

test("get_instance_children lists, filters, recurses and cuts", function()
	local _, run = Fake.setup()
	local r = run("get_instance_children", { path = "Workspace.Model" })
	eq(r.total, 2)
	same(r.children[1], { name = "Part", className = "Part", path = "Workspace.Model.Part", children = 1 })
	eq(run("get_instance_children", { path = "Workspace.Model", recursive = true }).total, 3)
	eq(run("get_instance_children", { path = "Workspace", class_name = "Folder" }).total, 1)
	local cut = run("get_instance_children", { path = "Workspace", limit = 2 })
	eq(#cut.children, 2)
	eq(cut.truncated, true)
	truthy(cut.note:find("2 of 8", 1, true), cut.note)
end)

test("search_by_property compares in the property's type", function()
	local _, run = Fake.setup()
	local r = run("search_by_property", { property = "Material", value = "Neon" })
	eq(#r.results, 1)
	eq(r.results[1].path, "Workspace.Lava")
	local anchored = run("search_by_property", { property = "Anchored", value = true, path = "Workspace" })
	eq(#anchored.results, 3) -- Terrain, Baseplate, Model.Part
	local pos = run("search_by_property", { property = "Position", value = { type = "Vector3", value = { 2, 5, 0 } } })
	eq(pos.results[1].path, "Workspace.Model.Handle")
	eq(#run("search_by_property", { property = "Material", value = "NoSuchMaterial" }).results, 0)
end)

test("get_class_info for creatable, service and unknown classes", function()
	local _, run = Fake.setup()
	local r = run("get_class_info", { class_name = "Part" })
	eq(r.creatable, true)
	truthy(table.find(r.inherits, "BasePart"), "inherits BasePart")
	local size
	for _, p in ipairs(r.properties) do
		if p.name == "Size" then
			size = p
		end
	end
	same(size, { name = "Size", type = "Vector3", default = { type = "Vector3", value = { 4, 1, 2 } } })
	eq(run("get_class_info", { class_name = "Workspace" }).creatable, false)
	raises(function() run("get_class_info", { class_name = "part" }) end, "unknown class \"part\"")
end)

test("get_project_structure lists scripts with line counts and containers", function()
	local _, run = Fake.setup()
	local r = run("get_project_structure", {})
	local byPath = {}
	for _, s in ipairs(r.scripts) do
		byPath[s.path] = s
	end
	eq(byPath["ServerScriptService.MainScript"].lines, 3)
	eq(byPath["ReplicatedStorage.Shared"].className, "ModuleScript")
	local containers = {}
	for _, c in ipairs(r.containers) do
		containers[c.path] = true
	end
	truthy(containers["Workspace.Model"] and containers["StarterGui.HUD"], "containers")
	local cut = run("get_project_structure", { max_scripts = 1 })
	eq(#cut.scripts, 1)
	eq(cut.truncated, true)
end)

test("summarize_game counts instances, scripts, classes and tags", function()
	local _, run = Fake.setup()
	local r = run("summarize_game", {})
	eq(r.scripts, 3)
	eq(r.scriptLines, 6)
	eq(r.topClasses[1].className, "Part")
	same(r.tags, { "Lava" })
	truthy(r.instances > 20, "instances counted")
end)

test("get_selection reports Explorer's selection", function()
	local place, run = Fake.setup()
	eq(run("get_selection", {}).total, 0)
	place.game.Selection:Set({ place.game.Workspace.Lava, place.game.Workspace.Model })
	local r = run("get_selection", { limit = 1 })
	eq(r.total, 2)
	eq(r.selection[1].path, "Workspace.Lava")
	eq(r.truncated, true)
	eq(r.next_offset, 1)
	eq(run("get_selection", { limit = 1, offset = 1 }).selection[1].path, "Workspace.Model")
end)

test("search_by_property finds float32 and quantised values that were set from doubles (F9)", function()
	local place, run = Fake.setup()
	run("set_property", { path = "Workspace.Lava", property = "Transparency", value = 0.3 })
	eq(place.game.Workspace.Lava.Transparency ~= 0.3, true, "the engine stores 0.3 as float32")
	local r = run("search_by_property", { property = "Transparency", value = 0.3 })
	eq(#r.results, 1)
	eq(r.results[1].path, "Workspace.Lava")
	run("set_property", { path = "Workspace.Lava", property = "Color", value = { type = "Color3", value = { 0.3, 0.6, 0.9 } } })
	local c = run("search_by_property", { property = "Color", value = { type = "Color3", value = { 0.3, 0.6, 0.9 } } })
	eq(#c.results, 1, "Color3 compares within 1/510")
	run("set_property", { path = "Workspace.Lava", property = "Size", value = { type = "Vector3", value = { 1.1, 2.2, 3.3 } } })
	eq(#run("search_by_property", { property = "Size", value = { 1.1, 2.2, 3.3 } }).results, 1)
	eq(#run("search_by_property", { property = "Transparency", value = 0.31 }).results, 0, "not a loose match")
end)

test("whole-game searches skip Studio and plugin internals unless asked by path (F12)", function()
	local _, run = Fake.setup()
	local r = run("search_files", { query = "hello" })
	for _, hit in ipairs(r.results) do
		truthy(not hit.path:find("PluginGuiService", 1, true), "no other plugin's script: " .. hit.path)
	end
	eq(#r.results, 1)
	local asked = run("search_files", { query = "hello", path = "PluginGuiService" })
	eq(asked.results[1].path, "PluginGuiService.OtherPluginWidget.OtherPluginScript")
	-- a locked instance does not break a walk
	local s = run("search_objects", { class_name = "Script", path = "CoreGui" })
	eq(#s.results, 0)
	local all = run("search_objects", { class_name = "LuaSourceContainer" })
	for _, hit in ipairs(all.results) do
		truthy(not hit.path:find("CoreGui", 1, true) and not hit.path:find("PluginGui", 1, true), hit.path)
	end
	local tree = run("get_file_tree", {})
	for _, c in ipairs(tree.tree.children) do
		truthy(c.name ~= "CoreGui" and c.name ~= "PluginGuiService", "tree hides " .. c.name)
	end
end)

test("walks of a 100 000-instance place yield: other threads keep running and the answers say when they cut (F11)", function()
	local place, run = Fake.setup()
	Fake.bigPlace(place, 100000)
	local ticks, done = 0, {}
	local function background(name, args)
		task.spawn(function()
			done[name] = run(name, args)
		end)
	end
	-- the "poll loop": a thread that wants to run every frame
	task.spawn(function()
		while not (done.summarize_game and done.search_objects and done.search_files) do
			ticks = ticks + 1
			task.wait()
		end
	end)
	background("summarize_game", {})
	background("search_objects", { query = "nothing-matches-this" })
	background("search_files", { query = "needle", limit = 5 })
	Fake.L.runUntilIdle(3600, function()
		return done.summarize_game and done.search_objects and done.search_files
	end)
	truthy(ticks >= 50, "the other thread ran " .. ticks .. " times while three walks ran")
	truthy(done.summarize_game.instances >= 100000, "counted " .. tostring(done.summarize_game.instances))
	eq(done.summarize_game.truncated, false)
	eq(done.search_files.truncated, true)
	eq(#done.search_files.results, 5)
	eq(#done.search_objects.results, 0)
	local tree = run("get_file_tree", { path = "Workspace", depth = 2, max_nodes = 50 })
	eq(tree.truncated, true)
	truthy(tree.note:find("max_nodes", 1, true), tree.note)
end)

---------------------------------------------------------------- paging (issue 11 §3)
-- The nodes of one get_file_tree answer: path -> true for every node it shows (not the
-- "continued" ancestors, which an earlier page showed), in depth-first order.
local function treeNodes(answer, out, order)
	local function visit(node, path)
		if not node.continued then
			truthy(not out[path], "node " .. path .. " shown twice")
			out[path] = true
			table.insert(order, path)
		end
		for _, c in ipairs(node.children or {}) do
			visit(c, path .. "/" .. c.name)
		end
	end
	visit(answer.tree, answer.root)
end

-- Every page of a get_file_tree walk, following next_cursor.
local function allTreePages(run, args)
	local pages, cursor = {}, nil
	repeat
		local a = {}
		for k, v in pairs(args) do
			a[k] = v
		end
		a.cursor = cursor
		local page = run("get_file_tree", a)
		table.insert(pages, page)
		cursor = page.next_cursor
		eq(page.truncated, cursor ~= nil, "truncated iff there is a next_cursor")
		truthy(#pages < 1000, "the pages end")
	until cursor == nil
	return pages
end

test("get_file_tree pages: next_cursor continues where max_nodes cut, each node once, more counts the rest", function()
	local _, run = Fake.setup()
	local whole = run("get_file_tree", { depth = 4, max_nodes = 2000 })
	eq(whole.truncated, false)
	eq(whole.next_cursor, nil)
	local want, wantOrder = {}, {}
	treeNodes(whole, want, wantOrder)
	eq(whole.nodes, #wantOrder)
	local got, gotOrder = {}, {}
	local pages = allTreePages(run, { depth = 4, max_nodes = 5 })
	truthy(#pages >= 3, "several pages: " .. #pages)
	for i, page in ipairs(pages) do
		truthy(page.nodes <= 5, "page " .. i .. " nodes")
		treeNodes(page, got, gotOrder)
		if i > 1 then
			eq(page.tree.continued, true, "a later page starts with the root as a continued node")
		end
	end
	same(gotOrder, wantOrder, "the pages show the same nodes in the same order")
	truthy(pages[1].note:find("cursor=", 1, true), pages[1].note)
	-- "more" on the first page counts exactly the children its later pages show
	local firstTop = #(pages[1].tree.children or {})
	eq(firstTop + (pages[1].tree.more or 0), #whole.tree.children, "shown + more = the root's children")
	-- a cursor for another depth, or one that is not a cursor, is refused with what to do
	raises(function() run("get_file_tree", { depth = 3, max_nodes = 5, cursor = pages[1].next_cursor }) end,
		"depth=3")
	raises(function() run("get_file_tree", { depth = 4, cursor = "4:x" }) end, "is not a next_cursor")
	raises(function() run("get_file_tree", { depth = 4, cursor = "4:1..2" }) end, "malformed")
	raises(function() run("get_file_tree", { depth = 4, cursor = "4:999" }) end, "place changed")
end)

test("list tools page with offset: total, truncated, next_offset; the pages cover the whole answer", function()
	local place, run = Fake.setup()
	for i = 1, 7 do
		local p = Fake.make("Part", "Paged" .. i, place.game.Workspace, {})
		p:AddTag("Paged")
		Fake.make("Script", "PagedScript" .. i, place.game.ServerStorage, { Source = "print(" .. i .. ")" })
	end
	local cases = {
		{ tool = "search_objects", args = { query = "Paged" }, key = "results" },
		{ tool = "search_objects", args = { class_name = "BasePart" }, key = "results" },
		{ tool = "get_instance_children", args = { path = "Workspace" }, key = "children" },
		{ tool = "get_instance_children", args = { path = "Workspace", recursive = true }, key = "children" },
		{ tool = "search_by_property", args = { property = "Anchored", value = false }, key = "results" },
		{ tool = "search_files", args = { query = "print" }, key = "results" },
		{ tool = "get_tagged", args = { tag = "Paged" }, key = "instances" },
		{ tool = "get_project_structure", args = {}, key = "scripts", limit = "max_scripts" },
		{ tool = "summarize_game", args = {}, key = "topClasses" },
	}
	for _, case in ipairs(cases) do
		local what = case.tool .. " " .. case.key
		local whole = run(case.tool, case.args)
		local n = #whole[case.key]
		truthy(n >= 3, what .. ": enough to page (" .. n .. ")")
		eq(whole.total, n, what .. " total")
		eq(whole.truncated, false, what)
		local seen, offset, pages = {}, 0, 0
		while true do
			local args = {}
			for k, v in pairs(case.args) do
				args[k] = v
			end
			args[case.limit or "limit"] = 2
			args.offset = offset
			local page = run(case.tool, args)
			pages = pages + 1
			eq(page.total, n, what .. " page total")
			for _, item in ipairs(page[case.key]) do
				table.insert(seen, item)
			end
			if not page.truncated then
				eq(page.next_offset, nil, what)
				break
			end
			eq(page.next_offset, offset + #page[case.key], what .. " next_offset")
			truthy(page.note:find("offset=" .. page.next_offset, 1, true), page.note)
			offset = page.next_offset
		end
		eq(pages, math.floor((n + 1) / 2), what .. " pages")
		same(seen, whole[case.key], what .. ": the pages together are the whole answer")
		local past = run(case.tool, (function()
			local a = { offset = n + 5 }
			for k, v in pairs(case.args) do
				a[k] = v
			end
			return a
		end)())
		eq(#past[case.key], 0, what .. " past the end")
		truthy(past.note:find("past the last", 1, true), what .. ": " .. tostring(past.note))
	end
end)

test("a 100 000-instance place: get_file_tree pages cost what they show, the cursor goes on", function()
	local place, run = Fake.setup()
	Fake.bigPlace(place, 100000)
	-- count the instances get_file_tree asks for (GetChildren calls) on each page
	local calls = 0
	local I = Fake.I
	local orig = I.classes.Instance.methods.GetChildren
	I.classes.Instance.methods.GetChildren = function(self)
		calls = calls + 1
		return orig(self)
	end
	local first = run("get_file_tree", { path = "Workspace", depth = 2, max_nodes = 100 })
	local firstCalls = calls
	eq(first.nodes, 100)
	eq(first.truncated, true)
	truthy(firstCalls <= 150, "the first page looked at " .. firstCalls .. " instances, not the place")
	-- a page far into the tree skips what came before by index, without walking it
	local page, cursor = first, first.next_cursor
	for _ = 1, 5 do
		page = run("get_file_tree", { path = "Workspace", depth = 2, max_nodes = 100, cursor = cursor })
		cursor = page.next_cursor
	end
	calls = 0
	local later = run("get_file_tree", { path = "Workspace", depth = 2, max_nodes = 100, cursor = cursor })
	I.classes.Instance.methods.GetChildren = orig
	truthy(calls <= 150, "a later page looked at " .. calls .. " instances")
	eq(later.nodes, 100)
	eq(later.tree.continued, true)
	local a, ao = {}, {}
	treeNodes(first, a, ao)
	local b, bo = {}, {}
	treeNodes(later, b, bo)
	for path in pairs(b) do
		truthy(not a[path], path .. " is on two pages")
	end
end)
