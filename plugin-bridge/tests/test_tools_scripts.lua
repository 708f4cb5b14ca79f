-- test_tools_scripts.lua - script tools read and write through ScriptEditorService: drafts win
-- over .Source, line edits are exact (including CRLF-free round trips and trailing newlines),
-- ranges are checked, and `expected` refuses edits based on a stale read.

local Fake = require("fake")

local MAIN = "ServerScriptService.MainScript"

local function source(place)
	return place.game:GetService("ScriptEditorService"):GetEditorSource(place.game.ServerScriptService.MainScript)
end

test("get_script_source returns the text, line count and ranges", function()
	local _, run = Fake.setup()
	local r = run("get_script_source", { path = MAIN })
	eq(r.source, "print(\"hello\")\nlocal x = 1\nreturn x")
	eq(r.lineCount, 3)
	eq(r.truncated, false)
	local part = run("get_script_source", { path = MAIN, start_line = 2, end_line = 3 })
	eq(part.source, "local x = 1\nreturn x")
	eq(part.startLine, 2)
	eq(part.endLine, 3)
end)

test("get_script_source reads the editor draft, not the stale .Source", function()
	local place, run = Fake.setup()
	local scr = place.game.ServerScriptService.MainScript
	place.state[scr].editorSource = "-- unsaved draft"
	eq(run("get_script_source", { path = MAIN }).source, "-- unsaved draft")
end)

test("get_script_source cuts at max_chars on a line boundary and says where to go on", function()
	local place, run = Fake.setup()
	local lines = {}
	for i = 1, 100 do
		lines[i] = string.rep("x", 50) .. i
	end
	place.game.ServerScriptService.MainScript.Source = table.concat(lines, "\n")
	local r = run("get_script_source", { path = MAIN, max_chars = 200 })
	eq(r.truncated, true)
	eq(r.endLine, 3)
	truthy(r.note:find("start_line=4", 1, true), r.note)
	local nxt = run("get_script_source", { path = MAIN, start_line = 4, max_chars = 200 })
	eq(nxt.startLine, 4)
end)

test("script tools refuse things that are not scripts", function()
	local _, run = Fake.setup()
	raises(function() run("get_script_source", { path = "Workspace.Lava" }) end, "is a Part, not a Script")
	raises(function() run("set_script_source", { path = "Workspace", source = "" }) end, "not a Script")
	raises(function() run("get_script_source", { path = "ServerScriptService.Nope" }) end, "no child named \"Nope\"")
end)

test("set_script_source goes through UpdateSourceAsync and replaces drafts", function()
	local place, run = Fake.setup()
	local scr = place.game.ServerScriptService.MainScript
	place.state[scr].editorSource = "-- draft"
	local r = run("set_script_source", { path = MAIN, source = "print(1)\nprint(2)\n" })
	eq(r.lineCount, 3)
	eq(source(place), "print(1)\nprint(2)\n")
	eq(scr.Source, "print(1)\nprint(2)\n")
	eq(place.state[place.game.ScriptEditorService].updates, 1)
end)

test("a rejected editor update is reported and changes nothing", function()
	local place, run = Fake.setup()
	place.state[place.game.ScriptEditorService].rejectNext = true
	raises(function() run("set_script_source", { path = MAIN, source = "x" }) end, "nothing was changed")
	eq(source(place), "print(\"hello\")\nlocal x = 1\nreturn x")
end)

test("edit_script_lines replaces a range with any number of lines", function()
	local place, run = Fake.setup()
	local r = run("edit_script_lines", { path = MAIN, start_line = 2, end_line = 2, replacement = "local x = 2\nlocal y = 3" })
	same(r.newLines, { 2, 3 })
	eq(r.lineCount, 4)
	eq(source(place), "print(\"hello\")\nlocal x = 2\nlocal y = 3\nreturn x")
	run("edit_script_lines", { path = MAIN, start_line = 1, end_line = 4, replacement = "return \"quotes \\\" kept\"" })
	eq(source(place), "return \"quotes \\\" kept\"")
end)

test("edit_script_lines checks ranges and expected text", function()
	local place, run = Fake.setup()
	raises(function() run("edit_script_lines", { path = MAIN, start_line = 4, end_line = 4, replacement = "" }) end,
		"start_line 4 is past the end: the script has 3 lines")
	raises(function() run("edit_script_lines", { path = MAIN, start_line = 2, end_line = 9, replacement = "" }) end,
		"end_line 9 is past the end")
	raises(function() run("edit_script_lines", { path = MAIN, start_line = 3, end_line = 2, replacement = "" }) end,
		"is before start_line")
	local err = raises(function()
		run("edit_script_lines", { path = MAIN, start_line = 2, end_line = 2, replacement = "z", expected = "local x = 9" })
	end, "not the expected text")
	truthy(err:find("local x = 1", 1, true), "shows the current text: " .. err)
	eq(source(place), "print(\"hello\")\nlocal x = 1\nreturn x")
	run("edit_script_lines", { path = MAIN, start_line = 2, end_line = 2, replacement = "z", expected = "local x = 1" })
	eq(source(place), "print(\"hello\")\nz\nreturn x")
end)

test("insert_script_lines at the top, in the middle and at the end", function()
	local place, run = Fake.setup()
	run("insert_script_lines", { path = MAIN, after_line = 0, lines = "--!strict" })
	run("insert_script_lines", { path = MAIN, after_line = 2, lines = "-- a\n-- b" })
	local r = run("insert_script_lines", { path = MAIN, after_line = 6, lines = "-- end" })
	same(r.inserted, { 7, 7 })
	eq(source(place), "--!strict\nprint(\"hello\")\n-- a\n-- b\nlocal x = 1\nreturn x\n-- end")
	raises(function() run("insert_script_lines", { path = MAIN, after_line = 99, lines = "x" }) end, "past the end")
	raises(function() run("insert_script_lines", { path = MAIN, after_line = -1, lines = "x" }) end, ">= 0")
end)

test("delete_script_lines removes a range, with expected", function()
	local place, run = Fake.setup()
	run("delete_script_lines", { path = MAIN, start_line = 1, end_line = 2 })
	eq(source(place), "return x")
	raises(function() run("delete_script_lines", { path = MAIN, start_line = 1, end_line = 1, expected = "nope" }) end,
		"not the expected text")
	run("delete_script_lines", { path = MAIN, start_line = 1, end_line = 1 })
	eq(source(place), "")
end)

test("line edits keep a trailing newline and blank lines exactly", function()
	local place, run = Fake.setup()
	run("set_script_source", { path = MAIN, source = "a\n\nb\n" })
	eq(run("get_script_source", { path = MAIN }).lineCount, 4)
	run("edit_script_lines", { path = MAIN, start_line = 3, end_line = 3, replacement = "B" })
	eq(source(place), "a\n\nB\n")
end)

test("a source with CRLF line endings is stored with LF and does not fail the read-back (F21)", function()
	local place, run = Fake.setup()
	local r = run("set_script_source", { path = "ServerScriptService.MainScript", source = "local a = 1\r\nreturn a\r\n" })
	eq(r.lineCount, 3)
	eq(place.game.ServerScriptService.MainScript.Source, "local a = 1\nreturn a\n")
	run("edit_script_lines", { path = "ServerScriptService.MainScript", start_line = 1, end_line = 1, replacement = "local a = 2\r\nlocal b = 3" })
	eq(place.game.ServerScriptService.MainScript.Source, "local a = 2\nlocal b = 3\nreturn a\n")
end)

test("check_syntax compiles without running: source, one script, every script under a path", function()
	local place, run = Fake.setup()
	local ok = run("check_syntax", { source = "local x = 1\nreturn x" })
	eq(ok.ok, true)
	eq(ok.checked, 1)
	local bad = run("check_syntax", { source = "local x = 1\nif x then\nprint('never')" })
	eq(bad.ok, false)
	eq(bad.errors[1].path, "source")
	eq(type(bad.errors[1].line), "number")
	truthy(bad.errors[1].message ~= "", "a message")
	Fake.make("Script", "Broken", place.game.ServerScriptService, { Source = "print('a')\nlocal = 2\n" })
	Fake.make("Script", "Sideeffect", place.game.ServerScriptService, { Source = "game.Workspace.Lava:Destroy()" })
	local all = run("check_syntax", {})
	eq(all.ok, false)
	eq(#all.errors, 1)
	eq(all.errors[1].path, "ServerScriptService.Broken")
	eq(all.errors[1].line, 2)
	truthy(all.checked >= 4, "checked " .. all.checked)
	truthy(place.game.Workspace:FindFirstChild("Lava"), "nothing ran")
	eq(run("check_syntax", { path = "ServerScriptService.MainScript" }).ok, true)
	local cut = run("check_syntax", { limit = 1 })
	eq(cut.truncated, true)
	eq(cut.checked, 1)
	eq(cut.total, all.checked)
	eq(cut.next_offset, 1)
	truthy(cut.note:find("offset=1", 1, true), cut.note)
	-- the pages together check every script once and find the same error
	local found, checked, offset = 0, 0, 0
	while true do
		local page = run("check_syntax", { limit = 2, offset = offset })
		checked = checked + page.checked
		found = found + #page.errors
		if not page.truncated then
			break
		end
		offset = page.next_offset
	end
	eq(checked, all.checked)
	eq(found, 1)
end)
