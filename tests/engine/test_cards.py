from engine import cards


def test_forty_cards_each_once():
    assert len(cards.FULL_DECK) == 40
    assert len(set(cards.FULL_DECK)) == 40
    assert {cards.suit(c) for c in cards.FULL_DECK} == {"o", "c", "e", "b"}
    assert all(sum(1 for c in cards.FULL_DECK if cards.suit(c) == s) == 10 for s in cards.SUITS)


def test_worth_and_the_deck_totals_220():
    assert cards.value("7o") == 7
    assert cards.value("10b") == 10
    assert cards.value("1c") == 1
    assert cards.total(cards.FULL_DECK) == 220 == 14 * 15 + 10


def test_codes():
    assert cards.is_card("7o") and cards.is_card("10b")
    assert not cards.is_card("11o") and not cards.is_card("0c") and not cards.is_card("7x")
    assert not cards.is_card(7) and not cards.is_card(None)
    assert cards.is_coin("3o") and not cards.is_coin("3c")
    assert cards.is_seven("7e") and not cards.is_seven("1e")
    assert cards.SEVEN_OF_COINS == "7o"


def test_labels_per_deck_design():
    assert cards.label("8o", "french") == "Q♦"
    assert cards.label("9o", "french") == "J♦"
    assert cards.label("10b", "french") == "K♣"
    assert cards.label("8o", "french_swapped") == "J♦"
    assert cards.label("9o", "french_swapped") == "Q♦"
    assert cards.label("8o", "spanish") == "Sota de oros"
    assert cards.label("9c", "spanish") == "Caballo de copas"
    assert cards.label("10e", "spanish") == "Rey de espadas"
    assert cards.label("1b", "spanish") == "As de bastos"
    assert cards.label("10c", "numeric") == "10♥"
    assert cards.label("1e", "numeric") == "A♠"
    for design in cards.DECKS:
        assert len(set(cards.labels(design).values())) == 40
