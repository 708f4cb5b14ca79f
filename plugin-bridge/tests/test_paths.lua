-- test_paths.lua - instance paths: dots, optional game. prefix, bracket quoting, and errors that
-- name the failing segment and list the names that exist there.

local Fake = require("fake")
local place = Fake.newPlace()
local Paths = Fake.load("Paths")
local game = place.game

test("dot paths resolve, with or without game.", function()
	local part = game.Workspace.Model.Part
	eq(Paths.resolve(game, "Workspace.Model.Part"), part)
	eq(Paths.resolve(game, "game.Workspace.Model.Part"), part)
	eq(Paths.resolve(game, "workspace.Model"), game.Workspace.Model)
	eq(Paths.resolve(game, "game"), game)
	eq(Paths.resolve(game, "  Workspace.Model.Part\n"), part, "surrounding spaces are ignored")
	eq(Paths.resolve(game, "ServerScriptService.MainScript").ClassName, "Script")
end)

test("services that are not children yet resolve through GetService", function()
	eq(Paths.resolve(game, "Teams").ClassName, "Teams")
	eq(Paths.resolve(game, "TextChatService").ClassName, "TextChatService")
end)

test("bracket quoting reaches names with dots, spaces and quotes", function()
	local inner = game.Workspace["a.b"].Inner
	eq(Paths.resolve(game, "Workspace[\"a.b\"].Inner"), inner)
	eq(Paths.resolve(game, "Workspace['a.b'].Inner"), inner)
	eq(Paths.resolve(game, "game.Workspace[\"a.b\"][\"Inner\"]"), inner)
	local odd = Fake.make("Folder", "say \"hi\" \\ there", game.Workspace)
	local p = Paths.format(odd)
	eq(p, "Workspace[\"say \\\"hi\\\" \\\\ there\"]")
	eq(Paths.resolve(game, p), odd)
end)

test("format is the inverse of resolve for every instance in the place", function()
	for _, inst in ipairs(game:GetDescendants()) do
		if not inst:IsDescendantOf(game.CoreGui) then -- locked instances cannot be named
			local p = Paths.format(inst)
			eq(Paths.resolve(game, p), inst, p)
		end
	end
	eq(Paths.format(game), "game")
	eq(Paths.format(game.Workspace), "Workspace")
end)

test("a missing segment is named, with the siblings that exist", function()
	local err = raises(function() Paths.resolve(game, "Workspace.Modl.Part") end, "no child named \"Modl\"")
	truthy(err:find("segment 2", 1, true), err)
	truthy(err:find("Baseplate", 1, true) and err:find("Model", 1, true), "siblings listed: " .. err)
	truthy(err:find("[\"a.b\"]", 1, true), "quoted sibling: " .. err)
	err = raises(function() Paths.resolve(game, "Workspace.Model.Nope") end, "Workspace.Model has no child named \"Nope\"")
	truthy(err:find("Handle", 1, true), err)
	raises(function() Paths.resolve(game, "NotAService.X") end, "game has no child named \"NotAService\"")
end)

test("the sibling list stops at 20 and counts the rest", function()
	local f = Fake.make("Folder", "Many", game.Workspace)
	for k = 1, 25 do
		Fake.make("Folder", "Item" .. k, f)
	end
	local err = raises(function() Paths.resolve(game, "Workspace.Many.Item99") end, "(and 5 more)")
	truthy(err:find("Item20", 1, true) and not err:find("Item21", 1, true), err)
end)

test("malformed paths are refused with the reason", function()
	raises(function() Paths.resolve(game, "Workspace..Part") end, "empty name")
	raises(function() Paths.resolve(game, "Workspace.") end, "ends with")
	raises(function() Paths.resolve(game, "Workspace[a.b]") end, "quoted name")
	raises(function() Paths.resolve(game, "Workspace[\"a.b") end, "unterminated")
	raises(function() Paths.resolve(game, 42) end, "must be a string")
end)

test("parse splits names", function()
	same(Paths.parse("game.Workspace[\"x.y\"].Z"), { "game", "Workspace", "x.y", "Z" })
	same(Paths.parse("A"), { "A" })
end)
